/*
 * reserve.c -- the generator's reservation step alone, in four designs,
 * side by side: how many IDs per second N threads reserve from one shared
 * word, each call reading the wall clock as nextflake() does.  No
 * PostgreSQL: this isolates the contention on the shared word, which is
 * what decides how the generator scales with cores.
 *
 *   cas    every call computes the next ID from the last one and installs
 *          it with compare-and-swap, retrying when another thread won
 *          (flakeid 1.1)
 *   faa    every call reads the word, then takes the next tick with one
 *          fetch-and-add, or starts the clock's millisecond with one
 *          compare-and-swap when the clock has moved past the counter:
 *          the word's cache line comes twice per call, for the read and
 *          for the write
 *   faa1   every call takes the next tick with one fetch-and-add first,
 *          and only when that tick is behind the clock skips it and
 *          starts the clock's millisecond: the line comes once per call
 *          (nextflake() while its IDs keep up with the clock).  faa and
 *          faa1 keep IDs strictly increasing across threads
 *   block  every thread takes 64 ticks at a time with one fetch-and-add
 *          and hands them out itself within their millisecond (IDs only
 *          k-ordered across threads)
 *
 * The layout is node_bits 0 (4,194,304 IDs per ms): no sequence cap, so
 * only the shared word limits the rate.
 *
 * A backend does other work between two calls (the executor's, about
 * 100 ns a row), so by its next call another core has the word: "work"
 * spins that many iterations between calls to show it (0: back to back,
 * where a thread often finds the word still in its own cache).
 *
 *   cc -O2 -pthread -o reserve bench/reserve.c
 *   ./reserve [seconds per run] [max threads] [work]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SEQ_BITS	22
#define BLOCK		64

static _Atomic uint64_t word;
static _Atomic int stop;
static int	work = 0;

typedef struct Worker
{
	pthread_t	thread;
	const char *mode;
	uint64_t	ids;
	uint64_t	last;			/* the last ID this thread got: they must rise */
	int			broken;
	char		pad[64];
} Worker;

static inline uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - UINT64_C(1577836800000);
}

static uint64_t
next_cas(void)
{
	uint64_t	last = atomic_load(&word);

	for (;;)
	{
		uint64_t	next = (now_ms() << SEQ_BITS);

		if (next <= last)
			next = last + 1;
		if (atomic_compare_exchange_weak(&word, &last, next))
			return next;
	}
}

static uint64_t
next_faa(void)
{
	for (;;)
	{
		uint64_t	cur = atomic_load(&word);
		uint64_t	tick = now_ms() << SEQ_BITS;

		if (cur < tick)
		{
			if (atomic_compare_exchange_strong(&word, &cur, tick + 1))
				return tick;
			continue;
		}
		return atomic_fetch_add(&word, 1);
	}
}

static uint64_t
next_faa_first(void)
{
	for (;;)
	{
		uint64_t	tick = now_ms() << SEQ_BITS;
		uint64_t	got = atomic_fetch_add(&word, 1);
		uint64_t	cur;

		if (got >= tick)
			return got;
		/* behind the clock: the tick is skipped, the clock's ms started */
		cur = got + 1;
		while (cur < tick)
		{
			if (atomic_compare_exchange_strong(&word, &cur, tick + 1))
				return tick;
		}
	}
}

typedef struct Block
{
	uint64_t	next;
	uint64_t	end;
} Block;

static uint64_t
next_block(Block *b)
{
	uint64_t	tick = now_ms() << SEQ_BITS;

	/* a block is used only within its own millisecond */
	if (b->next < b->end && (b->next >> SEQ_BITS) == (tick >> SEQ_BITS))
		return b->next++;
	for (;;)
	{
		uint64_t	cur = atomic_load(&word);

		if (cur < tick)
		{
			if (!atomic_compare_exchange_strong(&word, &cur, tick + BLOCK))
				continue;
			b->next = tick;
		}
		else
			b->next = atomic_fetch_add(&word, BLOCK);
		b->end = b->next + BLOCK;
		return b->next++;
	}
}

static void *
run(void *arg)
{
	Worker	   *w = arg;
	Block		block = {0, 0};
	int			mode = strcmp(w->mode, "cas") == 0 ? 0 :
		strcmp(w->mode, "faa") == 0 ? 1 :
		strcmp(w->mode, "faa1") == 0 ? 3 : 2;

	while (!atomic_load_explicit(&stop, memory_order_relaxed))
	{
		for (int i = 0; i < 1000; i++)
		{
			uint64_t	id = mode == 0 ? next_cas() :
				mode == 1 ? next_faa() :
				mode == 3 ? next_faa_first() : next_block(&block);

			for (volatile int k = 0; k < work; k++)
				;
			if (id <= w->last)
				w->broken = 1;
			w->last = id;
		}
		w->ids += 1000;
	}
	return NULL;
}

static double
measure(const char *mode, int threads, double seconds)
{
	Worker	   *w = calloc(threads, sizeof(Worker));
	struct timespec pause = {(time_t) seconds,
	(long) ((seconds - (time_t) seconds) * 1e9)};
	uint64_t	total = 0;

	atomic_store(&word, 0);
	atomic_store(&stop, 0);
	for (int i = 0; i < threads; i++)
	{
		w[i].mode = mode;
		pthread_create(&w[i].thread, NULL, run, &w[i]);
	}
	nanosleep(&pause, NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < threads; i++)
	{
		pthread_join(w[i].thread, NULL);
		total += w[i].ids;
		if (w[i].broken)
			fprintf(stderr, "%s: thread %d got a non-increasing ID\n", mode, i);
	}
	free(w);
	return total / seconds;
}

int
main(int argc, char **argv)
{
	double		seconds = argc > 1 ? atof(argv[1]) : 2.0;
	int			max_threads = argc > 2 ? atoi(argv[2]) : 2;
	const char *modes[] = {"cas", "faa", "faa1", "block"};

	work = argc > 3 ? atoi(argv[3]) : 0;
	printf("threads\tcas M/s\tfaa M/s\tfaa1 M/s\tblock M/s\t(work %d)\n", work);
	for (int threads = 1; threads <= max_threads;
		 threads = (threads * 2 > max_threads && threads < max_threads) ?
		 max_threads : threads * 2)
	{
		printf("%d", threads);
		for (int m = 0; m < 4; m++)
			printf("\t%.1f", measure(modes[m], threads, seconds) / 1e6);
		printf("\n");
		fflush(stdout);
	}
	return 0;
}
