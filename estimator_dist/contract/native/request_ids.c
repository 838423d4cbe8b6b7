/* Preloaded into the processes of a job: tensorflow::GetUniqueRequestId() gives ids that
 * never repeat within the process, and across processes only by a 64-bit chance.
 *
 * TensorFlow 2.15's own draws each id from a thread's mt19937_64, seeded from a 32-bit
 * value, and its master runs each step on a thread of its own: a step's RunGraph request
 * id is then one of 2^32 values. A worker refuses an id it has among its last 100,000
 * ("The same RunGraph (Worker) request was received twice"), taking it for an RPC sent
 * again; measured, a gRPC session stopped so after 24,000 to 85,000 steps, and a
 * multi_worker task cannot recover from it without its peers.
 *
 * Here the n-th id of a process is splitmix64's bijective mix of (a 64-bit random start +
 * n): distinct within the process; another process repeats one only where their
 * starts lie within as many ids of each other (for two of 10^8 ids each, 10^-11).
 * The start comes from /dev/urandom once (glibc 2.17 has no getrandom), else from the
 * clock, the pid and an address; a process's fork child draws its own.
 *
 * TensorFlow's libraries call the function through their procedure linkage table, so the
 * first library that defines it, this one, answers (C, under the C++ name). */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

static uint64_t start, next; /* start 0: not drawn yet. */

static uint64_t mixed(uint64_t z) { /* splitmix64's finalizer: a bijection. */
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static uint64_t random_start(void) {
  uint64_t start = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    if (read(fd, &start, sizeof start) != (ssize_t)sizeof start) start = 0;
    close(fd);
  }
  if (start == 0) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    start = mixed(((uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec) ^
                  ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&now);
  }
  return start;
}

static void forget_start(void) { start = next = 0; } /* In a fork's child, one thread. */

__attribute__((constructor)) static void draw_again_after_fork(void) {
  pthread_atfork(NULL, NULL, forget_start);
}

int64_t _ZN10tensorflow18GetUniqueRequestIdEv(void) {
  uint64_t expected = 0, id;
  if (__atomic_load_n(&start, __ATOMIC_ACQUIRE) == 0) { /* The first caller's start wins. */
    __atomic_compare_exchange_n(&start, &expected, random_start() | 1, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
  }
  do { /* 0 means "no id" to TensorFlow's workers. */
    id = mixed(__atomic_load_n(&start, __ATOMIC_ACQUIRE) +
               __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED));
  } while (id == 0);
  return (int64_t)id;
}
