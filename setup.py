"""Packaging for estimator_dist."""
import setuptools

setuptools.setup(
    name="estimator_dist",
    version="0.1.0",
    description=("Train an existing tf.estimator model on many workers with one "
                 "decorator and one flag."),
    packages=setuptools.find_packages(include=["estimator_dist*", "model_zoo*", "benchmarks*"]),
    package_data={"estimator_dist.task": ["native/*.c"]},
    python_requires=">=3.10,<3.12",
    install_requires=[
        "tensorflow-cpu==2.15.1",
        "tensorflow-estimator==2.15.0",
        "absl-py",
        "numpy<2",
        "scikit-learn",
        "pyyaml",
        "optuna==5.0.0",
        "matplotlib>=3.8,<3.10",
    ],
    extras_require={
        "horovod": ["horovod==0.28.1"],
        "spark": ["pyspark>=3.5,<3.6", "pyarrow<19"],
        "test": ["pytest", "pytest-timeout", "psutil", "pandas>=2.1,<2.3", "psycopg2-binary"],
    },
    entry_points={
        "console_scripts": ["estimator-dist=estimator_dist.cli:main"],
    },
)
