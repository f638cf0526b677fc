/* common/problem.c - what chute verify's two checkers, a folder's
 * (check/verify.c) and a remote version's (remote/verify_remote.c),
 * share: the --part they check, and a problem they found (struct
 * ch_problem, chute/common.h) counted and handed to the caller's callback. */
#include <stdio.h>

#include "common/internal.h"

void ch_problem_vreport(struct ch_problem *p, pthread_mutex_t *lock,
			uint64_t *count, ch_problem_fn on_problem, void *arg,
			const char *fmt, va_list ap)
{
	char msg[1024];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	p->message = msg;
	pthread_mutex_lock(lock);
	++*count;
	if (on_problem)
		on_problem(p, arg);
	pthread_mutex_unlock(lock);
}

int ch_verify_part_check(const struct ch_verify_opts *o, struct ch_error *err)
{
	if (o->parts && o->part >= o->parts)
		return ch_error_set(err, "no part %llu of %llu: parts count "
				    "from 0", (unsigned long long)o->part,
				    (unsigned long long)o->parts);
	return 0;
}
