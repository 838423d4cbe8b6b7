/* Preloaded into the processes of a job: tensorflow::GetUniqueRequestId() draws 64 random
 * bits from the kernel for each request.
 *
 * TensorFlow 2.15's own draws each id from a thread's mt19937_64, seeded from a 32-bit
 * value, and its master runs each step on a thread of its own: a step's RunGraph request
 * id is then one of 2^32 values. A worker refuses an id it has among its last 100,000
 * ("The same RunGraph (Worker) request was received twice"), taking it for an RPC sent
 * again; measured, a gRPC session stopped so after 24,000 to 85,000 steps, and a
 * multi_worker task cannot recover from it without its peers. With 64 bits a request
 * repeats one of the last 100,000 with a chance of 5 in 10^15: under one in a million
 * for a job of 10^8 requests.
 *
 * TensorFlow's libraries call the function through their procedure linkage table, so the
 * first library that defines it, this one, answers (C, under the C++ name). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <sys/random.h>

#define NAME "_ZN10tensorflow18GetUniqueRequestIdEv"

typedef int64_t (*id_function)(void);

int64_t _ZN10tensorflow18GetUniqueRequestIdEv(void) {
  int64_t id = 0;
  while (id == 0) { /* 0 means "no id" to TensorFlow's workers. */
    ssize_t got = getrandom(&id, sizeof id, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got != (ssize_t)sizeof id) { /* No getrandom (a kernel before 3.17): TensorFlow's. */
      id_function own = (id_function)dlsym(RTLD_NEXT, NAME);
      return own ? own() : 1;
    }
  }
  return id;
}
