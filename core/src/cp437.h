/* cp437.h - code page 437 tables (the kernel's codepage=437 nls_disk),
 * generated into cp437.c. Only names.c uses them. */
#ifndef VFAT_CP437_H
#define VFAT_CP437_H

#include <stddef.h>
#include <stdint.h>

/* Byte -> Unicode. Byte 0 maps to 0 (no character). */
extern const uint16_t cp437_to_uni[256];
/* Effective nls_toupper / nls_tolower: identity where CP437 has no pair. */
extern const uint8_t cp437_upper[256];
extern const uint8_t cp437_lower[256];

/* Unicode (one UTF-16 unit) -> byte, or -1 when CP437 has no such
 * character (surrogates, CJK, U+0000, ...). */
int cp437_from_uni(uint16_t u);

#endif /* VFAT_CP437_H */
