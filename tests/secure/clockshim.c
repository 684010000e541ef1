/* clockshim.c: an LD_PRELOAD library that moves a process's wall clock by HSP_CLOCK_OFFSET seconds (the KDC of the clock-skew test); the monotonic clock is left alone. */
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static long
clockshim_offset(void)
{
    const char *s = getenv("HSP_CLOCK_OFFSET");

    return s != NULL ? strtol(s, NULL, 10) : 0;
}

int
clock_gettime(clockid_t clk, struct timespec *ts)
{
    static int (*real)(clockid_t, struct timespec *);
    int rc;

    if (real == NULL) {
        real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT,
                                                            "clock_gettime");
    }
    rc = real(clk, ts);
    if (rc == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE)) {
        ts->tv_sec += clockshim_offset();
    }
    return rc;
}

int
gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    struct timespec ts;

    (void)tz;
    clock_gettime(CLOCK_REALTIME, &ts);
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t
time(time_t *t)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    if (t != NULL) {
        *t = ts.tv_sec;
    }
    return ts.tv_sec;
}
