/* Preloaded into the processes of a job: a bind() to every interface (0.0.0.0 or [::])
 * binds to the job's own address instead: ESTIMATOR_DIST_BIND_ADDRESS (an IPv4 address;
 * 0.0.0.0 leaves binds alone), else the IPv4 address that interface
 * ESTIMATOR_DIST_BIND_INTERFACE has on this host (one setting for a job across hosts),
 * else 127.0.0.1. TensorFlow's gRPC
 * servers, horovodrun's services and MPI's listeners bind to every interface whatever
 * address their cluster names; with this, a job is reached only at the address it names. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_function)(int, const struct sockaddr *, socklen_t);

static bind_function real_bind(void) {
  static bind_function function;
  if (!function) function = (bind_function)dlsym(RTLD_NEXT, "bind");
  return function;
}

/* The IPv4 address of interface `name` on this host; 0 where it has none. */
static int interface_address(const char *name, struct in_addr *address) {
  struct ifaddrs *list, *item;
  int found = 0;
  if (getifaddrs(&list) != 0) return 0;
  for (item = list; item && !found; item = item->ifa_next) {
    if (item->ifa_addr && item->ifa_addr->sa_family == AF_INET &&
        strcmp(item->ifa_name, name) == 0) {
      *address = ((const struct sockaddr_in *)item->ifa_addr)->sin_addr;
      found = 1;
    }
  }
  freeifaddrs(list);
  return found;
}

static struct in_addr job_address(void) {
  struct in_addr address;
  const char *text = getenv("ESTIMATOR_DIST_BIND_ADDRESS");
  const char *interface = getenv("ESTIMATOR_DIST_BIND_INTERFACE");
  if (text && inet_pton(AF_INET, text, &address) == 1) return address;
  if (interface && *interface && interface_address(interface, &address)) return address;
  address.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

int bind(int fd, const struct sockaddr *address, socklen_t length) {
  struct in_addr own = job_address();
  if (own.s_addr == htonl(INADDR_ANY)) return real_bind()(fd, address, length);
  if (address && address->sa_family == AF_INET && length >= sizeof(struct sockaddr_in)) {
    struct sockaddr_in ipv4 = *(const struct sockaddr_in *)address;
    if (ipv4.sin_addr.s_addr == htonl(INADDR_ANY)) {
      ipv4.sin_addr = own;
      return real_bind()(fd, (const struct sockaddr *)&ipv4, sizeof ipv4);
    }
  } else if (address && address->sa_family == AF_INET6 &&
             length >= sizeof(struct sockaddr_in6)) {
    struct sockaddr_in6 ipv6 = *(const struct sockaddr_in6 *)address;
    if (IN6_IS_ADDR_UNSPECIFIED(&ipv6.sin6_addr)) {
      /* The address as IPv6 (::ffff:a.b.c.d): a dual-stack socket then still takes the
       * IPv4 connections to the address that the cluster names. */
      static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
      memcpy(&ipv6.sin6_addr, mapped, sizeof mapped);
      memcpy((unsigned char *)&ipv6.sin6_addr + 12, &own, 4);
      int result = real_bind()(fd, (const struct sockaddr *)&ipv6, sizeof ipv6);
      if (result == 0 || errno != EINVAL) return result;
      ipv6.sin6_addr = in6addr_loopback; /* An IPv6-only socket takes ::1. */
      return real_bind()(fd, (const struct sockaddr *)&ipv6, sizeof ipv6);
    }
  }
  return real_bind()(fd, address, length);
}
