"""Program flags made from options dataclasses, so that each option is declared once.

An options dataclass (frozen, keyword-only) declares each option that a program sets from
its command line with `option(default, kind=..., help=...)`: the field, its default and
its flag in one place. A program then defines its flags and builds its options with

  holders = option_flags.define_flags(LaunchOptions, flag_values=flag_values)
  ...
  options = option_flags.options_from_flags(LaunchOptions, holders)

and the options' `__post_init__` checks the values (naming the flag in its message), as
it does for a library caller who passes keywords. Library code never defines flags.
"""

import dataclasses
import numbers
from typing import Dict, Optional, Tuple

from absl import flags

from estimator_dist import errors

FLAG = "flag"  # The key of an option field's metadata that holds its OptionFlag.
KINDS = ("bool", "enum", "float", "integer", "list", "multi_string", "string")


class _FieldDefault:
  def __repr__(self):
    return "FIELD_DEFAULT"


FIELD_DEFAULT = _FieldDefault()  # An OptionFlag's default: its field's.


@dataclasses.dataclass(frozen=True, kw_only=True)
class OptionFlag:
  """The program flag that sets an option.

  kind: absl's DEFINE_<kind>, one of KINDS. help: what the option does.
  name: the flag's name (default: the field's). values: an enum's values.
  lower_bound, upper_bound: an integer's or a float's bounds.
  flag_default: the flag's default where it is not the field's: a program that reads an
    unset flag as "decide later" (None) while the dataclass holds the decided value.
  """
  kind: str
  help: str
  name: Optional[str] = None
  values: Tuple[str, ...] = ()
  lower_bound: Optional[float] = None
  upper_bound: Optional[float] = None
  flag_default: object = FIELD_DEFAULT

  def __post_init__(self):
    if self.kind not in KINDS:
      raise TypeError(f"an option's flag kind is one of {', '.join(KINDS)}, "
                      f"not {self.kind!r}.")
    if (self.kind == "enum") != bool(self.values):
      raise TypeError("an enum flag, and only an enum flag, takes values=(...).")


def option(default=dataclasses.MISSING, **flag):
  """A dataclass field with `default` (none: the caller must give it), set by the program
  flag `OptionFlag(**flag)`."""
  return dataclasses.field(default=default, metadata={FLAG: OptionFlag(**flag)})


def flag_of(field) -> Optional[OptionFlag]:
  """The OptionFlag of a dataclass field, None if no flag sets it."""
  return field.metadata.get(FLAG)


def flag_name(field) -> str:
  """The name of the flag that sets `field` (which has one)."""
  return flag_of(field).name or field.name


def flag_default(field):
  """The default of the flag that sets `field`: its own, else the field's."""
  spec = flag_of(field)
  if spec.flag_default is not FIELD_DEFAULT:
    return spec.flag_default
  if field.default is not dataclasses.MISSING:
    return field.default
  if field.default_factory is not dataclasses.MISSING:
    return field.default_factory()
  return None


# absl's name of each kind's flags (Flag.flag_type()).
_ABSL_TYPES = {"bool": "bool", "enum": "string enum", "float": "float", "integer": "int",
               "list": "comma separated list of strings", "multi_string": "multi string",
               "string": "string"}


def _program_flag(spec, name, flag_values):
  """The flag `--name` a program already defined on `flag_values`, of `spec`'s kind; None
  if it defined none. A flag of another kind is an error naming both definitions."""
  if name not in flag_values:
    return None
  theirs = flag_values[name]
  if theirs.flag_type() == _ABSL_TYPES[spec.kind]:
    return flags.FlagHolder(flag_values, theirs)
  module = flag_values.find_module_defining_flag(name) or "the program"
  ours = _ABSL_TYPES[spec.kind]
  raise errors.ConfigError(
      f"--{name} is defined twice: by {module} ({theirs.flag_type()}) and by "
      f"estimator_dist.define_flags() ({ours}); rename the program's flag, or give it the "
      f"kind {ours}, and estimator_dist uses it.")


def define_flag(spec, *, name, default, flag_values=flags.FLAGS, help_prefix="",
                reuse=False):
  """Defines the flag `spec` (an OptionFlag) as `--name` with `default` on `flag_values`;
  its help gets `help_prefix` in front. Returns its FlagHolder.

  With `reuse`, a flag of the same name and kind that the program defined already is
  used as it is (its default and help); one of another kind is a ConfigError.
  """
  reused = _program_flag(spec, name, flag_values) if reuse else None
  if reused is not None:
    return reused
  help_text = help_prefix + spec.help
  if spec.kind == "enum":
    return flags.DEFINE_enum(name, default, spec.values, help_text, flag_values=flag_values)
  bounds = {}
  if spec.kind in ("integer", "float"):
    bounds = {key: value for key, value in (("lower_bound", spec.lower_bound),
                                            ("upper_bound", spec.upper_bound))
              if value is not None}
  return getattr(flags, f"DEFINE_{spec.kind}")(name, default, help_text,
                                               flag_values=flag_values, **bounds)


def flag_fields(options_class):
  """The fields of `options_class` that a flag sets, in their order."""
  return [field for field in dataclasses.fields(options_class) if flag_of(field)]


def define_flags(options_class, *, flag_values=flags.FLAGS, defaults=None,
                 helps=None, reuse=False) -> Dict[str, flags.FlagHolder]:
  """Defines on `flag_values` the flag of every field of `options_class` that has one, in
  the fields' order; `defaults` and `helps` ({field: value}) replace a default or a help
  that a program gives its own; `reuse` as in `define_flag`. Returns {field name:
  FlagHolder}."""
  defaults, helps = defaults or {}, helps or {}
  holders = {}
  for field in flag_fields(options_class):
    spec = flag_of(field)
    if field.name in helps:
      spec = dataclasses.replace(spec, help=helps[field.name])
    default = defaults[field.name] if field.name in defaults else flag_default(field)
    holders[field.name] = define_flag(spec, name=flag_name(field), default=default,
                                      flag_values=flag_values, reuse=reuse)
  return holders


def holders_of(options_class, flag_values) -> Dict[str, flags.FlagHolder]:
  """{field name: FlagHolder} of the flags that `define_flags(options_class)` defined on
  `flag_values`, for a caller that has no holders."""
  return {field.name: flags.FlagHolder(flag_values, flag_values[flag_name(field)])
          for field in flag_fields(options_class)}


def values_of(holders) -> Dict[str, object]:
  """{field name: the parsed value of its flag} of `define_flags`' holders."""
  return {name: holder.value for name, holder in holders.items()}


def options_from_flags(options_class, holders, **values):
  """An `options_class` from the parsed flags `define_flags` gave `holders` for; `values`
  sets the fields that no flag sets, or that the program derives from its flags."""
  return options_class(**{**values_of(holders), **values})


def check_declared(options):
  """Checks every field of the options dataclass `options` that a flag sets against its
  flag's declaration (an enum's values, a number's kind and bounds), as absl checks the
  flag: a library caller who passes keywords gets the same refusal as the command line,
  naming the flag. A field whose default is None may be None; a number may be numpy's."""
  for field in flag_fields(type(options)):
    spec, value = flag_of(field), getattr(options, field.name)
    if value is None and field.default is None:
      continue
    name = f"--{flag_name(field)}"
    if spec.kind == "enum":
      errors.check_choice(name, value, spec.values)
    elif spec.kind in ("integer", "float"):
      kinds = numbers.Integral if spec.kind == "integer" else numbers.Real
      low, high = spec.lower_bound, spec.upper_bound
      if not (isinstance(value, kinds) and not isinstance(value, bool) and
              (low is None or value >= low) and (high is None or value <= high)):
        raise errors.ConfigError(f"{name} ({value!r}) must be {_what(spec)}.")


def _what(spec):
  """What a number flag takes, in words: 'a positive integer', 'a number from 1 to 10'."""
  integer, low, high = spec.kind == "integer", spec.lower_bound, spec.upper_bound
  if high is None and low == 1 and integer:
    return "a positive integer"
  if high is None and low == 0:
    return f"a non-negative {'integer' if integer else 'number'}"
  what = "an integer" if integer else "a number"
  if low is not None and high is not None:
    return f"{what} from {low:g} to {high:g}"
  if low is not None:
    return f"{what} of at least {low:g}"
  return f"{what} of at most {high:g}" if high is not None else what
