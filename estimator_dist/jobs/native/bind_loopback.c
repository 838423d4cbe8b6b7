/* Preloaded into the processes of a local job: a bind() to every interface (0.0.0.0 or
 * [::]) binds to the loopback interface instead. TensorFlow's gRPC servers, horovodrun's
 * services and MPI's listeners bind to every interface whatever address their cluster
 * names; with this, a local job cannot be reached from another machine. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_function)(int, const struct sockaddr *, socklen_t);

static bind_function real_bind(void) {
  static bind_function function;
  if (!function) function = (bind_function)dlsym(RTLD_NEXT, "bind");
  return function;
}

int bind(int fd, const struct sockaddr *address, socklen_t length) {
  if (address && address->sa_family == AF_INET && length >= sizeof(struct sockaddr_in)) {
    struct sockaddr_in ipv4 = *(const struct sockaddr_in *)address;
    if (ipv4.sin_addr.s_addr == htonl(INADDR_ANY)) {
      ipv4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      return real_bind()(fd, (const struct sockaddr *)&ipv4, sizeof ipv4);
    }
  } else if (address && address->sa_family == AF_INET6 &&
             length >= sizeof(struct sockaddr_in6)) {
    struct sockaddr_in6 ipv6 = *(const struct sockaddr_in6 *)address;
    if (IN6_IS_ADDR_UNSPECIFIED(&ipv6.sin6_addr)) {
      /* 127.0.0.1 as IPv6 (::ffff:127.0.0.1): a dual-stack socket then still takes the
       * IPv4 connections to 127.0.0.1 that the cluster's addresses name. */
      static const unsigned char mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0,
                                               0, 0, 0xff, 0xff, 127, 0, 0, 1};
      memcpy(&ipv6.sin6_addr, mapped, sizeof mapped);
      int result = real_bind()(fd, (const struct sockaddr *)&ipv6, sizeof ipv6);
      if (result == 0 || errno != EINVAL) return result;
      ipv6.sin6_addr = in6addr_loopback; /* An IPv6-only socket takes ::1. */
      return real_bind()(fd, (const struct sockaddr *)&ipv6, sizeof ipv6);
    }
  }
  return real_bind()(fd, address, length);
}
