/*
 * The two clocks: the wall clock for what a person reads (event times,
 * "since"), the monotonic one for every deadline, delay and rate, which a
 * step of the wall clock (NTP, an operator's date) must not move. A file of
 * its own so the actions' unit tests can link a clock they drive.
 */
#include <stdint.h>
#include <time.h>

#include "log.h"

double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
