// SPDX-License-Identifier: GPL-2.0
/*
 * wsem: the module parameters that other files read (the limits of ns.c,
 * the spin of wait.c) and, in test builds, the test knobs (wsem.h).
 *
 * Calls no other file of wsem.
 */
#include <linux/atomic.h>
#include <linux/compiler.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/moduleparam.h>
#include <linux/sched/signal.h>
#include <linux/sysfs.h>
#include <linux/timekeeping.h>

#include "wsem.h"

unsigned int max_sems_per_ns = 1024;
module_param(max_sems_per_ns, uint, 0644);
MODULE_PARM_DESC(max_sems_per_ns,
		 "Semaphores (named or anonymous) one IPC namespace may hold (default 1024)");

unsigned int max_sems_per_user = 256;
module_param(max_sems_per_user, uint, 0644);
MODULE_PARM_DESC(max_sems_per_user,
		 "Semaphores one user may have created in one IPC namespace (default 256)");

unsigned int max_children_per_user = 256;
module_param(max_children_per_user, uint, 0644);
MODULE_PARM_DESC(max_children_per_user,
		 "Child semaphores one user may have created, counted across every IPC and user namespace as the user of the initial user namespace they come from (default 256); past it ENOSPC, but with CAP_SYS_RESOURCE there");

unsigned int max_tree_size = 1024;
module_param(max_tree_size, uint, 0644);
MODULE_PARM_DESC(max_tree_size,
		 "Semaphores one tree (a root and all its descendants) may hold, whoever creates them and in whichever namespace (default 1024); a child past it is ENOSPC");

/*
 * spin_ns above this is refused: a poll that long is a busy wait.  Test
 * builds have the same bound, so that tests see what users get.
 */
#define WSEM_SPIN_NS_MAX	1000000U

static int wsem_set_spin_ns(const char *val, const struct kernel_param *kp)
{
	unsigned int ns;
	int ret = kstrtouint(val, 0, &ns);

	if (ret)
		return ret;
	if (ns > WSEM_SPIN_NS_MAX)
		return -EINVAL;
	WRITE_ONCE(spin_ns, ns);
	return 0;
}

static const struct kernel_param_ops wsem_spin_ns_ops = {
	.set	= wsem_set_spin_ns,
	.get	= param_get_uint,
};

unsigned int spin_ns = 20000;
module_param_cb(spin_ns, &wsem_spin_ns_ops, &spin_ns, 0644);
MODULE_PARM_DESC(spin_ns,
		 "How long a waiter at the head of the queue polls for its grant before it sleeps, while its CPU has nothing else to run (ns, default 20000, at most 1000000; 0: never); each semaphore polls less while its waits are longer");

#ifdef WSEM_TEST_KNOBS
static unsigned int test_tell_delay_ms;
module_param(test_tell_delay_ms, uint, 0600);
MODULE_PARM_DESC(test_tell_delay_ms,
		 "Test builds only: the next granter waits this long between dropping the lock and telling whom it granted (ms, once)");

/* Sleep for what the one-shot delay knob @ms holds, and clear it. */
static void wsem_test_sleep_once(unsigned int *ms)
{
	unsigned int left = xchg(ms, 0);

	if (left)
		msleep(left);
}

void wsem_test_pause(void)
{
	wsem_test_sleep_once(&test_tell_delay_ms);
}

static unsigned int test_park_delay_ms;
module_param(test_park_delay_ms, uint, 0600);
MODULE_PARM_DESC(test_park_delay_ms,
		 "Test builds only: the next sleeper or gang that parks to run its task work waits this long before it returns, or until a signal is sent to it (ms, once)");

/*
 * Is a signal pending for current, its thread's or its process's?  Not
 * signal_pending(): the task work that parked it sets that flag too.
 */
static bool wsem_test_signal_sent(void)
{
	/* without the siglock: a test's pause polls it, a late look is fine */
	return data_race(!sigisemptyset(&current->pending.signal) ||
			 !sigisemptyset(&current->signal->shared_pending.signal));
}

/*
 * The parked sleeper's pause: until what test_park_delay_ms holds (and
 * it is cleared) has passed, polled every 20 ms, ended early by a
 * signal sent to the sleeper, so that a test can arm a long pause and end
 * it with the signal its thread leaves by: a busy machine that takes
 * seconds to send it does not miss the window.
 */
void wsem_test_park_pause(void)
{
	unsigned int ms = xchg(&test_park_delay_ms, 0);
	unsigned long end = jiffies + msecs_to_jiffies(ms);

	while (ms && time_before(jiffies, end) && !wsem_test_signal_sent())
		msleep(20);
}

/* A read-only parameter that shows the atomic_t it is given as its arg. */
static int wsem_test_counter_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", atomic_read((atomic_t *)kp->arg));
}

const struct kernel_param_ops wsem_test_counter_ops = {
	.get	= wsem_test_counter_get,
};

static atomic_t wsem_test_parked = ATOMIC_INIT(0);

void wsem_test_count_parked(int delta)
{
	atomic_add(delta, &wsem_test_parked);
}

module_param_cb(test_parked, &wsem_test_counter_ops, &wsem_test_parked, 0444);
MODULE_PARM_DESC(test_parked,
		 "Test builds only: parked waiters and gangs not yet freed (read-only)");

static atomic_t wsem_test_walked = ATOMIC_INIT(0);

void wsem_test_count_walked(void)
{
	atomic_inc(&wsem_test_walked);
}

module_param_cb(test_shrink_walked, &wsem_test_counter_ops, &wsem_test_walked,
		0444);
MODULE_PARM_DESC(test_shrink_walked,
		 "Test builds only: waiters that shrinks' failing walks looked at (read-only)");

static atomic_t wsem_test_regrants = ATOMIC_INIT(0);

void wsem_test_count_regrant(void)
{
	atomic_inc(&wsem_test_regrants);
}

module_param_cb(test_regrants, &wsem_test_counter_ops, &wsem_test_regrants,
		0444);
MODULE_PARM_DESC(test_regrants,
		 "Test builds only: queues whose first waiter a shrink failed (read-only)");

static unsigned int test_view_delay_ms;
module_param(test_view_delay_ms, uint, 0600);
MODULE_PARM_DESC(test_view_delay_ms,
		 "Test builds only: the next holders view waits this long after its first hold of the tree's lock (ms, once)");

void wsem_test_view_pause(void)
{
	wsem_test_sleep_once(&test_view_delay_ms);
}

static unsigned int test_view_batch;
module_param(test_view_batch, uint, 0600);
MODULE_PARM_DESC(test_view_batch,
		 "Test builds only: if not 0, a holders view looks at this many entries in each hold of a tree's lock, not 64");

unsigned int wsem_test_view_batch(unsigned int batch)
{
	return READ_ONCE(test_view_batch) ?: batch;
}

static atomic_t wsem_test_view_most = ATOMIC_INIT(0);

void wsem_test_note_view_hold(unsigned int looked)
{
	int most = atomic_read(&wsem_test_view_most);

	while ((int)looked > most &&
	       !atomic_try_cmpxchg(&wsem_test_view_most, &most, looked))
		;
}

module_param_cb(test_view_most_looked, &wsem_test_counter_ops,
		&wsem_test_view_most, 0444);
MODULE_PARM_DESC(test_view_most_looked,
		 "Test builds only: the most entries a holders view looked at in one hold of a tree's lock (read-only)");

static unsigned int test_js_flush_delay_ms;
module_param(test_js_flush_delay_ms, uint, 0600);
MODULE_PARM_DESC(test_js_flush_delay_ms,
		 "Test builds only: the next close of a jobserver endpoint descriptor waits this long before it looks for the process's other descriptors (ms, once)");

void wsem_test_js_flush_pause(void)
{
	wsem_test_sleep_once(&test_js_flush_delay_ms);
}

static unsigned int test_loan_expiry_delay_ms;
module_param(test_loan_expiry_delay_ms, uint, 0600);
MODULE_PARM_DESC(test_loan_expiry_delay_ms,
		 "Test builds only: the next work item of a loan's deadline waits this long before it looks (ms, once)");

void wsem_test_loan_expiry_pause(void)
{
	wsem_test_sleep_once(&test_loan_expiry_delay_ms);
}

/*
 * test_revalidate_hold: 1 arms it; the next RCU-walk revalidation of a
 * semaphore's file stores 2 and spins (an RCU-walk may not sleep) until
 * the knob is written 0, 5 s at most.
 */
static unsigned int test_revalidate_hold;
module_param(test_revalidate_hold, uint, 0600);
MODULE_PARM_DESC(test_revalidate_hold,
		 "Test builds only: 1 arms it; the next RCU-walk revalidation of a semaphore's file shows 2 and spins until this is 0 again (5 s at most)");

void wsem_test_revalidate_hold(void)
{
	u64 end;

	if (READ_ONCE(test_revalidate_hold) != 1 ||
	    cmpxchg(&test_revalidate_hold, 1, 2) != 1)
		return;
	end = ktime_get_ns() + 5 * NSEC_PER_SEC;
	while (READ_ONCE(test_revalidate_hold) && ktime_get_ns() < end)
		cpu_relax();
}

static bool test_spin_to_deadline;
module_param(test_spin_to_deadline, bool, 0600);
MODULE_PARM_DESC(test_spin_to_deadline,
		 "Test builds only: a head waiter with a deadline polls until it (100 ms at most), ended only by its grant or a signal");

bool wsem_test_spin_to_deadline(void)
{
	return READ_ONCE(test_spin_to_deadline);
}

static unsigned int test_cgroup_tryget_fail;
module_param(test_cgroup_tryget_fail, uint, 0600);
MODULE_PARM_DESC(test_cgroup_tryget_fail,
		 "Test builds only: if not 0, the next reference to a new holder's cgroup fails (once)");

bool wsem_test_cgroup_fail(void)
{
	return READ_ONCE(test_cgroup_tryget_fail) &&
	       xchg(&test_cgroup_tryget_fail, 0);
}

/* At most 1 ms: the pause spins under the tree's lock. */
static unsigned int test_publish_delay_us;
module_param(test_publish_delay_us, uint, 0600);
MODULE_PARM_DESC(test_publish_delay_us,
		 "Test builds only: every rewrite of a counters page pauses this long between the capacity and the used weight (us, at most 1000; 0: none)");

void wsem_test_publish_pause(void)
{
	unsigned int us = READ_ONCE(test_publish_delay_us);

	if (us)
		udelay(min(us, 1000U));
}
#endif
