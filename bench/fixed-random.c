/*
 * Loaded into each process bench/instr.sh counts (LD_PRELOAD), so that the count of an operation
 * is the same in every run of the same binary.
 *
 * A process seeds its hash maps from the operating system's randomness (std's RandomState, the
 * maps of serde_json, IndexMap, foldhash). The seeds decide the order in which a map's entries
 * are visited and dropped, so they decide the order of the frees, and glibc's allocator then does
 * different work to keep its free lists: the same operation counted 334,406 to 341,826
 * instructions (2.2%) over runs of one binary, most of a 3% budget's room. Here getrandom(2)
 * gives a fixed stream instead (splitmix64 from the state FIXED_RANDOM_SEED names): every run
 * with the same seed sees the same bytes, while successive calls still get different ones, so ids
 * drawn from it do not collide.
 *
 * Only for counting: nothing here is random, and no process but a counted bench loads it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>

static uint64_t state = 0x5eed5eed5eed5eedULL;

__attribute__((constructor)) static void seed(void) {
  const char *seed = getenv("FIXED_RANDOM_SEED");
  if (seed != NULL) state ^= strtoull(seed, NULL, 10) * 0x9e3779b97f4a7c15ULL;
}

static uint64_t next(void) {
  uint64_t z = __atomic_add_fetch(&state, 0x9e3779b97f4a7c15ULL, __ATOMIC_RELAXED);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

ssize_t getrandom(void *buf, size_t len, unsigned int flags) {
  unsigned char *out = buf;
  (void)flags;
  for (size_t i = 0; i < len; i += 8) {
    uint64_t word = next();
    for (size_t j = 0; j < 8 && i + j < len; j++) out[i + j] = (unsigned char)(word >> (8 * j));
  }
  return (ssize_t)len;
}

int getentropy(void *buf, size_t len) {
  getrandom(buf, len, 0);
  return 0;
}
