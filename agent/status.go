// SPDX-License-Identifier: GPL-2.0

package main

// wsem-agent status NAME: the cluster limit as etcd has it, each host's
// share, demand and place in the queue, and this host's semaphore.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"wsem.example/wsem"
)

// A hostStatus is one host's line.
type hostStatus struct {
	Host  string `json:"host"`
	Share int64  `json:"share"`
	Need  int64  `json:"need"`
	Floor int64  `json:"floor"`
	Queue int    `json:"queue"` // place in the cluster's queue, 0: none
	Alive bool   `json:"alive"` // its agent holds its claim in etcd
	This  bool   `json:"this"`
}

// A localStatus is this host's semaphore: its loan, what is held, who
// waits.
type localStatus struct {
	Capacity int64 `json:"capacity"`
	Used     int64 `json:"used"`
	Waiters  int64 `json:"waiters"`
}

// A clusterStatus is what status prints.
type clusterStatus struct {
	Name     string       `json:"name"`
	Prefix   string       `json:"prefix"`
	Revision int64        `json:"revision"`
	Capacity int64        `json:"capacity"`
	Next     int64        `json:"capacity_next,omitempty"` // set-capacity's shrink
	Free     int64        `json:"free"`
	Hosts    []hostStatus `json:"hosts"`
	// This host's semaphore, if it can be read here.
	Local      *localStatus `json:"local,omitempty"`
	LocalError string       `json:"local_error,omitempty"`
}

// hostRows is a line for each host that has a share, a demand or a live
// agent in v, in the order of the host names; me is this host.
func (v *view) hostRows(me string) []hostStatus {
	// (sorts of names and of revisions, no map lookup in a comparison,
	// no struct swapped: a look writes these rows for wsem stat, and at
	// 1,000 hosts they were most of a look's time)
	q := make(byRev, 0, len(v.demands))
	for h, d := range v.demands {
		q = append(q, hostRev{h, d.rev})
	}
	sort.Sort(q)
	place := make(map[string]int, len(q))
	for i, e := range q {
		place[e.host] = i + 1
	}
	hosts := make([]string, 0, len(v.shares)+len(v.demands))
	for h := range v.shares {
		hosts = append(hosts, h)
	}
	for h := range v.demands {
		if _, ok := v.shares[h]; !ok {
			hosts = append(hosts, h)
		}
	}
	for h := range v.alive {
		_, share := v.shares[h]
		_, demand := v.demands[h]
		if !share && !demand {
			hosts = append(hosts, h)
		}
	}
	sort.Strings(hosts)
	rows := make([]hostStatus, len(hosts))
	for i, h := range hosts {
		d := v.demands[h]
		rows[i] = hostStatus{Host: h, Share: v.shares[h], Need: d.need,
			Floor: d.floor, Queue: place[h], Alive: v.alive[h],
			This: h == me}
	}
	return rows
}

// A hostRev is a host and its demand's revision; byRev sorts them.
type hostRev struct {
	host string
	rev  int64
}

type byRev []hostRev

func (q byRev) Len() int           { return len(q) }
func (q byRev) Less(i, j int) bool { return q[i].rev < q[j].rev }
func (q byRev) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }

// statusOf is the limit as etcd has it now (a read of the prefix: the
// status command runs once, and keeps no view), and this host's semaphore.
func statusOf(ctx context.Context, st *store, lim *limit) (*clusterStatus, error) {
	v, rev, err := st.read(ctx)
	if err != nil {
		return nil, err
	}
	cs := &clusterStatus{Name: lim.name, Prefix: st.prefix,
		Revision: rev, Capacity: v.capacity, Free: v.free(),
		Next:  v.next,
		Hosts: v.hostRows(lim.host)}
	if v.full != 0 {
		cs.Capacity = v.full
	}
	w, err := wsem.OpenWatch(lim.name)
	if err == nil {
		var s *wsem.Stat
		if s, err = w.Stat(); err == nil {
			cs.Local = &localStatus{s.Capacity, s.Used, s.Waiters}
		}
		w.Close()
	}
	if err != nil {
		cs.LocalError = err.Error()
	}
	return cs, nil
}

func (cs *clusterStatus) print(out io.Writer) {
	fmt.Fprintf(out, "%s: capacity %d across the cluster, %d free "+
		"(etcd %s, revision %d)\n", cs.Name, cs.Capacity, cs.Free,
		cs.Prefix, cs.Revision)
	if cs.Next != 0 {
		fmt.Fprintf(out, "set-capacity %d under way: the shares "+
			"fall first\n", cs.Next)
	}
	fmt.Fprintf(out, "%-20s %8s %8s %8s %6s %s\n", "HOST", "SHARE",
		"NEED", "FLOOR", "QUEUE", "AGENT")
	for _, h := range cs.Hosts {
		name, q, agent := h.Host, "-", "gone"
		if h.This {
			name += " *"
		}
		if h.Queue > 0 {
			q = fmt.Sprint(h.Queue)
		}
		if h.Alive {
			agent = "alive"
		}
		fmt.Fprintf(out, "%-20s %8d %8d %8d %6s %s\n", name, h.Share,
			h.Need, h.Floor, q, agent)
	}
	if cs.Local != nil {
		fmt.Fprintf(out, "this host (*): %s lent %d, used %d, %d "+
			"waiting\n", cs.Name, cs.Local.Capacity, cs.Local.Used,
			cs.Local.Waiters)
	} else {
		fmt.Fprintf(out, "this host (*): %s\n", cs.LocalError)
	}
}

func statusCmd(out io.Writer, confs []string, name string, asJSON bool) error {
	return onLimit(confs, name, ttlTimes(1), func(ctx context.Context, st *store,
		lim *limit) error {
		cs, err := statusOf(ctx, st, lim)
		if err != nil {
			return err
		}
		if asJSON {
			return json.NewEncoder(out).Encode(cs)
		}
		cs.print(out)
		return nil
	})
}
