/* SPDX-License-Identifier: GPL-2.0 */
/*
 * wsem's tracepoints: events/wsem/ in tracefs, for perf, trace-cmd and
 * bpftrace.  A semaphore is its id (fdinfo's wsem-id); pid is the thread
 * that queued, waited or was granted (a hand-off is traced by the granter,
 * in whose context common_pid is).  Disabled, each costs a static branch.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM wsem

#if !defined(_WSEM_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _WSEM_TRACE_H

#include <linux/tracepoint.h>

TRACE_EVENT(wsem_queue,
	    TP_PROTO(int id, pid_t pid, u64 weight, u64 waiters),
	    TP_ARGS(id, pid, weight, waiters),
	    TP_STRUCT__entry(__field(int, id)
			     __field(pid_t, pid)
			     __field(u64, weight)
			     __field(u64, waiters)
	    ),
	    TP_fast_assign(__entry->id = id;
			   __entry->pid = pid;
			   __entry->weight = weight;
			   __entry->waiters = waiters;
	    ),
	    TP_printk("id=%d pid=%d weight=%llu waiters=%llu", __entry->id,
		      __entry->pid, __entry->weight, __entry->waiters)
);

TRACE_EVENT(wsem_grant,
	    TP_PROTO(int id, pid_t pid, u64 weight, u64 wait_ns),
	    TP_ARGS(id, pid, weight, wait_ns),
	    TP_STRUCT__entry(__field(int, id)
			     __field(pid_t, pid)
			     __field(u64, weight)
			     __field(u64, wait_ns)
	    ),
	    TP_fast_assign(__entry->id = id;
			   __entry->pid = pid;
			   __entry->weight = weight;
			   __entry->wait_ns = wait_ns;
	    ),
	    TP_printk("id=%d pid=%d weight=%llu wait_ns=%llu", __entry->id,
		      __entry->pid, __entry->weight, __entry->wait_ns)
);

TRACE_EVENT(wsem_release,
	    TP_PROTO(int id, u64 weight, u64 used),
	    TP_ARGS(id, weight, used),
	    TP_STRUCT__entry(__field(int, id)
			     __field(u64, weight)
			     __field(u64, used)
	    ),
	    TP_fast_assign(__entry->id = id;
			   __entry->weight = weight;
			   __entry->used = used;
	    ),
	    TP_printk("id=%d weight=%llu used=%llu", __entry->id, __entry->weight,
		      __entry->used)
);

/* A wait that ended without a grant: timeout, signal or shrink. */
TRACE_EVENT(wsem_wait_end,
	    TP_PROTO(int id, pid_t pid, u64 weight, int error, u64 wait_ns),
	    TP_ARGS(id, pid, weight, error, wait_ns),
	    TP_STRUCT__entry(__field(int, id)
			     __field(pid_t, pid)
			     __field(u64, weight)
			     __field(int, error)
			     __field(u64, wait_ns)
	    ),
	    TP_fast_assign(__entry->id = id;
			   __entry->pid = pid;
			   __entry->weight = weight;
			   __entry->error = error;
			   __entry->wait_ns = wait_ns;
	    ),
	    TP_printk("id=%d pid=%d weight=%llu error=%d wait_ns=%llu",
		      __entry->id, __entry->pid, __entry->weight, __entry->error,
		      __entry->wait_ns)
);

TRACE_DEFINE_ENUM(WSEM_SPIN_TOLD);
TRACE_DEFINE_ENUM(WSEM_SPIN_BUDGET);
TRACE_DEFINE_ENUM(WSEM_SPIN_DEADLINE);
TRACE_DEFINE_ENUM(WSEM_SPIN_BUSY);
TRACE_DEFINE_ENUM(WSEM_SPIN_SIGNAL);

/* A waiter's poll before sleeping (spin_ns): how long, and why it ended. */
TRACE_EVENT(wsem_spin,
	    TP_PROTO(int id, pid_t pid, u64 spin_ns, int end),
	    TP_ARGS(id, pid, spin_ns, end),
	    TP_STRUCT__entry(__field(int, id)
			     __field(pid_t, pid)
			     __field(u64, spin_ns)
			     __field(int, end)
	    ),
	    TP_fast_assign(__entry->id = id;
			   __entry->pid = pid;
			   __entry->spin_ns = spin_ns;
			   __entry->end = end;
	    ),
	    TP_printk("id=%d pid=%d spin_ns=%llu end=%s", __entry->id,
		      __entry->pid, __entry->spin_ns,
		      __print_symbolic(__entry->end,
				       { WSEM_SPIN_TOLD, "told" },
				       { WSEM_SPIN_BUDGET, "budget" },
				       { WSEM_SPIN_DEADLINE, "deadline" },
				       { WSEM_SPIN_BUSY, "busy" },
				       { WSEM_SPIN_SIGNAL, "signal" }))
);

TRACE_EVENT(wsem_capacity,
	    TP_PROTO(int id, u64 old, u64 capacity),
	    TP_ARGS(id, old, capacity),
	    TP_STRUCT__entry(__field(int, id)
			     __field(u64, old)
			     __field(u64, capacity)
	    ),
	    TP_fast_assign(__entry->id = id;
			   __entry->old = old;
			   __entry->capacity = capacity;
	    ),
	    TP_printk("id=%d old=%llu capacity=%llu", __entry->id, __entry->old,
		      __entry->capacity)
);

/* A loan's deadline passed: what it lent is withdrawn (wsem_lend()). */
TRACE_EVENT(wsem_loan_expired,
	    TP_PROTO(int id, u64 lent),
	    TP_ARGS(id, lent),
	    TP_STRUCT__entry(__field(int, id)
			     __field(u64, lent)
	    ),
	    TP_fast_assign(__entry->id = id;
			   __entry->lent = lent;
	    ),
	    TP_printk("id=%d lent=%llu", __entry->id, __entry->lent)
);

#endif /* _WSEM_TRACE_H */

/* This part must be outside the include guard. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE wsem_trace
#include <trace/define_trace.h>
