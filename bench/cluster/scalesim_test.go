// SPDX-License-Identifier: GPL-2.0

//go:build scalesim

package main

// make bench-cluster's scale scenario (WSEM_BC_SCALE): many simulated
// hosts in one process, each a wsem-agent of its own.  This file is built
// into a copy of agent/ of each tree compared (bench/cluster/build-scale.sh:
// today's agent and the one before the kept view), as a test binary of the
// agent's package, so that each host runs that tree's own startWith and
// run: its etcd client, lease renewals, watch, looks and transactions.
// Only the host's semaphore is faked (simSem, as the agent's unit tests
// fake it): no wsem.ko is asked.  Every host has its own etcd client, as
// an agent has, unless -sim.clients says fewer (hosts share them round
// robin).
//
// It counts what etcd is asked from etcd's own /metrics (every member's
// grpc_server_msg_received_total, by method: one per unary request, one
// per message of a stream, such as a lease renewal or a watch's creation)
// and etcd's CPU from /proc/PID/stat (utime + stime of every member); its
// own CPU (the agents') from /proc/self/stat.  It prints "@@scale" lines:
//
//	@@scale TREE N start SECONDS
//	@@scale TREE N idle SECONDS cpu=ETCD_MS,SIM_MS METHOD=COUNT...
//	@@scale TREE N up|down I SECONDS cpu=ETCD_MS,SIM_MS METHOD=COUNT... seen=MS,MS,LEFT
//
// up: one host's semaphore gets a waiter of weight 1 (its need 1 -> 2);
// down: the grant released (need 2 -> 1).  seen: from the moment this
// process's own watch of the demand keys brought that host's new demand,
// the milliseconds until the median and the last agent looked at a view
// at or after its revision (the agents' last looks, sampled every
// -sim.sample), and how many agents had not by the window's end.

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	clientv3 "wsem.example/agent/etcdapi"
	"wsem.example/wsem"
)

var (
	simTree      = flag.String("sim.tree", "?", "the tree's name, for the output")
	simHosts     = flag.Int("sim.hosts", 0, "simulated hosts (0: skip the test)")
	simClients   = flag.Int("sim.clients", 0, "etcd clients (0: one per host)")
	simEndpoints = flag.String("sim.endpoints", "http://127.0.0.1:2379", "etcd's client URLs, comma-separated")
	simPids      = flag.String("sim.etcdpids", "", "the etcd members' pids, comma-separated")
	simSettle    = flag.Duration("sim.settle", 10*time.Second, "wait after the start")
	simIdle      = flag.Duration("sim.idle", 20*time.Second, "the idle window")
	simWindow    = flag.Duration("sim.window", 0, "each change's window (0: holdmoved/2 + 4 s)")
	simChanges   = flag.Int("sim.changes", 3, "changes up (and down)")
	simTTL       = flag.Int("sim.ttl", 10, "ttl= of the agents")
	simHold      = flag.Duration("sim.hold", time.Second, "hold= of the agents")
	simHoldMoved = flag.Duration("sim.holdmoved", time.Second, "hold= of the hosts whose demand changes")
	simSample    = flag.Duration("sim.sample", 5*time.Millisecond, "how often the agents' last looks are read")
)

// simSem is a host's semaphore as the agent sees it: what is lent, held
// and waited for.  A waiter is granted as soon as the loan covers it.
type simSem struct {
	mu sync.Mutex
	st wsem.Stat
}

func (s *simSem) lend(n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.Lent, s.st.LentHere, s.st.Capacity = n, n, n
	if s.st.Waiters > 0 && s.st.Used+s.st.QueuedWeight <= n {
		s.st.Used += s.st.QueuedWeight
		s.st.QueuedWeight, s.st.Waiters = 0, 0
		s.st.GrantsWaited++
	}
	return nil
}

func (s *simSem) Lend(n int64) error              { return s.lend(n) }
func (s *simSem) LendEndingHolders(n int64) error { return s.lend(n) }
func (s *simSem) LendUntil(n int64, _ bool, _ time.Duration) error {
	return s.lend(n)
}

func (s *simSem) Stat() (*wsem.Stat, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	return &st, nil
}

func (s *simSem) Holders() ([]wsem.Holder, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.Waiters == 0 {
		return nil, nil
	}
	return []wsem.Holder{{Weight: s.st.QueuedWeight, Waiting: true}}, nil
}

// The watch handle: an eventfd, which poll() and epoll watch as they do
// the kernel's handle and which never reports a change (POLLRDBAND), so
// the agent looks at its demand every hold/2, as it does at the latest
// anyway; it sleeps between (an agent that waits in an epoll set; the
// old agent polls it ten times a second, as it polls the kernel's).
func (s *simSem) Handle() (*os.File, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), "sim-watch"), nil
}

func (s *simSem) File() (*os.File, error) { return os.Open(os.DevNull) }
func (s *simSem) Close() error            { return nil }

// hold makes the semaphore hold n more (a grant), or queue a waiter of n
// if the loan does not cover it; n < 0 releases.
func (s *simSem) hold(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n < 0 || s.st.Used+n <= s.st.Capacity {
		s.st.Used += n
		return
	}
	s.st.Waiters, s.st.QueuedWeight = 1, n
}

// counts is a scrape of every member's /metrics: requests received by
// method, and watch messages sent.
type counts map[string]float64

func scrape(urls []string) (counts, error) {
	c := counts{}
	for _, u := range urls {
		r, err := http.Get(strings.TrimSuffix(u, "/") + "/metrics")
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(r.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			var what string
			switch {
			case strings.HasPrefix(line, "grpc_server_msg_received_total{"):
				what = ""
			case strings.HasPrefix(line, "grpc_server_msg_sent_total{") &&
				strings.Contains(line, `grpc_method="Watch"`):
				what = "sent:"
			default:
				continue
			}
			i := strings.Index(line, `grpc_method="`)
			j := strings.LastIndexByte(line, ' ')
			if i < 0 || j < 0 {
				continue
			}
			m := line[i+len(`grpc_method="`):]
			m = m[:strings.IndexByte(m, '"')]
			n, err := strconv.ParseFloat(line[j+1:], 64)
			if err == nil && n > 0 {
				c[what+m] += n
			}
		}
		r.Body.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// cpuMS is the CPU time (utime + stime) of the processes, in ms.
func cpuMS(pids []string) float64 {
	var ticks float64
	for _, p := range pids {
		b, err := os.ReadFile("/proc/" + p + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		u, _ := strconv.ParseFloat(f[11], 64)
		s, _ := strconv.ParseFloat(f[12], 64)
		ticks += u + s
	}
	return ticks * 1000 / 100 // USER_HZ
}

// A mark is the counters at one instant.
type mark struct {
	at        time.Time
	c         counts
	etcd, sim float64
}

func takeMark(t *testing.T, urls, pids []string) mark {
	c, err := scrape(urls)
	if err != nil {
		t.Fatal(err)
	}
	return mark{time.Now(), c, cpuMS(pids), cpuMS([]string{"self"})}
}

// since is what the counters gained from m0 to m, as "@@scale" words.
func (m mark) since(m0 mark) string {
	var ks []string
	for k := range m.c {
		if m.c[k] != m0.c[k] {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	w := []string{fmt.Sprintf("%.2f cpu=%.0f,%.0f", m.at.Sub(m0.at).Seconds(),
		m.etcd-m0.etcd, m.sim-m0.sim)}
	for _, k := range ks {
		w = append(w, fmt.Sprintf("%s=%.0f", k, m.c[k]-m0.c[k]))
	}
	return strings.Join(w, " ")
}

// A look is an agent's last look's revision, from when it was read.
type look struct {
	at  time.Time
	rev int64
}

// sampler reads every agent's last look (its store's readView, which the
// agent's own goroutine writes: read here without a lock, one aligned
// int64) every -sim.sample, and keeps each agent's changes.
type sampler struct {
	mu    sync.Mutex
	looks [][]look
}

func (s *sampler) run(ctx context.Context, as []*agent) {
	s.looks = make([][]look, len(as))
	tk := time.NewTicker(*simSample)
	defer tk.Stop()
	for ctx.Err() == nil {
		now := time.Now()
		s.mu.Lock()
		for i, a := range as {
			rev := a.st.last.rev
			l := s.looks[i]
			if len(l) == 0 || l[len(l)-1].rev != rev {
				s.looks[i] = append(l, look{now, rev})
			}
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-tk.C:
		}
	}
}

// seen is when each agent first looked at a view at or after rev, after
// from: the median and largest delay, and how many did not.
func (s *sampler) seen(rev int64, from time.Time) (med, max float64, left int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ds []float64
	for _, l := range s.looks {
		i := sort.Search(len(l), func(i int) bool { return l[i].rev >= rev })
		if i == len(l) {
			left++
			continue
		}
		d := l[i].at.Sub(from).Seconds() * 1000
		if d < 0 {
			d = 0
		}
		ds = append(ds, d)
	}
	if len(ds) == 0 {
		return 0, 0, left
	}
	sort.Float64s(ds)
	return ds[len(ds)/2], ds[len(ds)-1], left
}

// A demandEvent is a put of a demand key, as this process's watch
// brought it.
type demandEvent struct {
	at    time.Time
	key   string
	value string
	rev   int64
}

func TestScaleSim(t *testing.T) {
	n := *simHosts
	if n == 0 {
		t.Skip("-sim.hosts not given")
	}
	eps := strings.Split(*simEndpoints, ",")
	pids := strings.Split(*simPids, ",")
	nc := *simClients
	if nc <= 0 || nc > n {
		nc = n
	}
	// (not t.TempDir: the agents still write their view files there
	// when the test ends, and its removal would fail the test)
	dir, err := os.MkdirTemp("", "wsem-scale.")
	if err != nil {
		t.Fatal(err)
	}
	runDir = dir
	createLoans = func(string, int64, os.FileMode) (kernelSem, error) {
		return &simSem{st: wsem.Stat{Ceiling: int64(2 * n), Mode: 0600}}, nil
	}
	// (the agents are never stopped, nor their clients closed: the
	// process exits after the last window, and etcd's data is thrown
	// away with the guest)
	ctx := context.Background()
	clis := make([]*clientv3.Client, nc)
	for i := range clis {
		cli, err := clientv3.New(clientv3.Config{Endpoints: eps,
			DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		clis[i] = cli
	}
	// The limit "scale", of capacity 2N, each host holding 1 of it: a
	// share of 1 in etcd before its agent starts, which the agent takes
	// up; its demand of 1 it publishes itself.  (Put here in batches:
	// N agents growing their shares at once would each compare every
	// share.)
	prefix := "/wsem/scale/"
	host := func(i int) string { return fmt.Sprintf("h%04d", i) }
	// the hosts whose demand changes, each once up and once down: their
	// hold= is -sim.holdmoved, so that their agents find the change
	// within holdmoved/2 whatever -sim.hold the others have
	moved := map[int]bool{}
	movedHost := func(c int) int { return (c*n/(*simChanges) + n/7) % n }
	for c := 0; c < *simChanges; c++ {
		moved[movedHost(c)] = true
	}
	began := time.Now()
	for i := 0; i < n; i += 100 {
		var ops []clientv3.Op
		if i == 0 {
			ops = append(ops, clientv3.OpPut(prefix+"capacity",
				strconv.Itoa(2*n)))
		}
		for j := i; j < i+100 && j < n; j++ {
			ops = append(ops, clientv3.OpPut(prefix+"share/"+host(j), "1"))
		}
		if _, err := clis[0].Txn(ctx).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	as := make([]*agent, n)
	sems := make([]*simSem, n)
	renewing := make([]context.CancelFunc, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				lim := &limit{name: "scale", capacity: int64(2 * n),
					endpoints: eps, policy: "finish", host: host(i),
					prefix: "/wsem", ttl: *simTTL, hold: *simHold,
					turn: time.Second, mode: 0600}
				if moved[i] {
					lim.hold = *simHoldMoved
				}
				a, err := startWith(ctx, lim, clis[i%nc])
				if err != nil {
					errs <- fmt.Errorf("%s: %v", host(i), err)
					continue
				}
				as[i], sems[i] = a, a.loc.w.(*simSem)
				sems[i].hold(1)
				// its renewals from now on (run's own
				// take over below): a start longer
				// than ttl= would lose the first
				// leases
				rctx, cancel := context.WithCancel(ctx)
				renewing[i] = cancel
				go a.renewLease(rctx)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	fmt.Printf("@@scale %s %d start %.2f\n", *simTree, n,
		time.Since(began).Seconds())
	for i, a := range as {
		renewing[i]()
		go a.run(ctx)
	}

	// This process's own watch of the demand keys: when each change
	// reached etcd, and its revision.
	var evMu sync.Mutex
	var evs []demandEvent
	wc := clis[0].Watch(ctx, prefix+"demand/", clientv3.WithPrefix())
	go func() {
		for r := range wc {
			now := time.Now()
			evMu.Lock()
			for _, ev := range r.Events {
				if ev.Type != clientv3.DELETE {
					evs = append(evs, demandEvent{now,
						string(ev.Kv.Key), string(ev.Kv.Value),
						ev.Kv.ModRevision})
				}
			}
			evMu.Unlock()
		}
	}()
	smp := &sampler{}
	go smp.run(ctx, as)

	time.Sleep(*simSettle)
	m0 := takeMark(t, eps, pids)
	time.Sleep(*simIdle)
	m1 := takeMark(t, eps, pids)
	fmt.Printf("@@scale %s %d idle %s\n", *simTree, n, m1.since(m0))

	// Each change on another host, spread over the fleet.  (Its agent
	// finds it at its next look, holdmoved/2 at most, then 4 s for the
	// rest.)
	window := *simWindow
	if window == 0 {
		window = *simHoldMoved/2 + 4*time.Second
	}
	for c := 0; c < *simChanges; c++ {
		h := movedHost(c)
		for _, dir := range []string{"up", "down"} {
			want, d := "2 2", int64(1)
			if dir == "down" {
				want, d = "1 1", -1
			}
			m0 := takeMark(t, eps, pids)
			sems[h].hold(d)
			time.Sleep(window)
			m1 := takeMark(t, eps, pids)
			var ev *demandEvent
			evMu.Lock()
			for i := range evs {
				if evs[i].key == prefix+"demand/"+host(h) &&
					evs[i].value == want && evs[i].at.After(m0.at) {
					ev = &evs[i]
					break
				}
			}
			evMu.Unlock()
			seen := "seen=-,-," + strconv.Itoa(n)
			if ev != nil {
				med, max, left := smp.seen(ev.rev, ev.at)
				seen = fmt.Sprintf("seen=%.0f,%.0f,%d", med, max, left)
			}
			fmt.Printf("@@scale %s %d %s %d %s %s\n", *simTree, n, dir,
				c, m1.since(m0), seen)
			time.Sleep(time.Second)
		}
	}
}
