/* misc.c - FAT's time and date fields, as Linux 6.1's fs/fat/misc.c
 * converts them (fat_time_unix2fat, fat_time_fat2unix) with a zero
 * timezone offset: the kernel oracle mounts without tz= or time_offset=
 * in a guest whose sys_tz is 0, so local time is UTC.
 *
 * date: bits 0-4 day, 5-8 month, 9-15 years from 1980;
 * time: bits 0-4 seconds / 2, 5-10 minutes, 11-15 hours.
 */
#include "fat.h"

#define SECS_PER_DAY 86400
/* 1980-01-01 00:00:00 and 2107-12-31 23:59:58: sb->s_time_min/max */
#define FAT_UNIX_MIN 315532800LL
#define FAT_UNIX_MAX 4354819198LL

/* Days since 1970-01-01 -> civil date (proleptic Gregorian). */
static void civil(int64_t days, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;

	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

int64_t fat_clamp_time(int64_t sec)
{
	if (sec < FAT_UNIX_MIN)
		return FAT_UNIX_MIN;
	if (sec > FAT_UNIX_MAX)
		return FAT_UNIX_MAX;
	return sec;
}

/* fat_time_unix2fat for a time already inside FAT's range. */
void fat_time_unix2fat(int64_t sec, uint16_t *time, uint16_t *date)
{
	int64_t days = sec / SECS_PER_DAY, y;
	unsigned rem = (unsigned)(sec % SECS_PER_DAY), m, d;

	civil(days, &y, &m, &d);
	*time = (uint16_t)((rem / 3600) << 11 | ((rem / 60) % 60) << 5 | (rem % 60) >> 1);
	*date = (uint16_t)((unsigned)(y - 1980) << 9 | m << 5 | d);
}

/* fat_time_fat2unix: any field values (month and day 0 count as 1, as
 * the kernel's max(1, ...) does; hours past 23 are added as they are). */
int64_t fat_time_fat2unix(uint16_t time, uint16_t date)
{
	static const int days_in_year[16] = {
		0, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 0, 0, 0,
	};
	int64_t year = date >> 9, month = (date >> 5) & 0xf, day = date & 0x1f;
	int64_t leap;

	if (month < 1)
		month = 1;
	if (day < 1)
		day = 1;
	day--;
	leap = (year + 3) / 4;
	if (year > 120)                 /* 2100 is not a leap year */
		leap--;
	if (!(year & 3) && year != 120 && month > 2)
		leap++;
	return (int64_t)((time & 0x1f) << 1) + ((time >> 5) & 0x3f) * 60 +
	       (int64_t)(time >> 11) * 3600 +
	       (year * 365 + leap + days_in_year[month] + day + 3652) * SECS_PER_DAY;
}
