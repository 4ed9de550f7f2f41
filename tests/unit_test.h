/* unit_test.h - minimal test helpers for the C unit tests (one binary per
 * tests/unit_*.c, run by ctest). A failed CHECK prints file:line and the
 * expression and makes the binary exit 1 at the end. */
#ifndef VFAT_UNIT_TEST_H
#define VFAT_UNIT_TEST_H
#include <stdio.h>
#include <string.h>

static int ut_failed, ut_passed;

#define CHECK(cond) do { \
	if (cond) ut_passed++; \
	else { ut_failed++; fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } \
} while (0)

#define CHECK_EQ_INT(a, b) do { \
	long long ut_a = (long long)(a), ut_b = (long long)(b); \
	if (ut_a == ut_b) ut_passed++; \
	else { ut_failed++; fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", \
		__FILE__, __LINE__, #a, ut_a, #b, ut_b); } \
} while (0)

#define CHECK_EQ_MEM(a, b, n) do { \
	if (memcmp((a), (b), (n)) == 0) ut_passed++; \
	else { ut_failed++; fprintf(stderr, "%s:%d: bytes of %s differ from %s:\n  got     ", \
		__FILE__, __LINE__, #a, #b); \
		for (size_t ut_i = 0; ut_i < (size_t)(n); ut_i++) fprintf(stderr, "%02x ", ((const unsigned char *)(a))[ut_i]); \
		fprintf(stderr, "\n  expected "); \
		for (size_t ut_i = 0; ut_i < (size_t)(n); ut_i++) fprintf(stderr, "%02x ", ((const unsigned char *)(b))[ut_i]); \
		fprintf(stderr, "\n"); } \
} while (0)

/* Call at the end of main: prints the plain closing line, returns the exit code. */
static inline int ut_finish(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, ut_passed, ut_failed);
	return ut_failed ? 1 : 0;
}
#endif
