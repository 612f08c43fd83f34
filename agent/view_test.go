// SPDX-License-Identifier: GPL-2.0

package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func TestViewWord(t *testing.T) {
	for in, want := range map[string]string{
		"h1": "h1", "": "%00", "a b": "a%20b", "50%": "50%25",
		"x\ny\x7f": "x%0Ay%7F", "hôte": "hôte", "/wsem/s/": "/wsem/s/",
	} {
		if got := viewWord(in); got != want {
			t.Errorf("viewWord(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestViewText(t *testing.T) {
	v := &view{capacity: 6,
		shares: map[string]int64{"h1": 2, "h 2": 1},
		demands: map[string]demand{"h1": {need: 2, floor: 2, rev: 9},
			"h3": {need: 3, floor: 1, rev: 7}},
		alive: map[string]bool{"h0": true, "h1": true, "h3": true}}
	a := &agent{lim: &limit{name: "seats", host: "h1", ttl: 5,
		hold: 300 * time.Millisecond},
		st: &store{prefix: "/wsem/seats/",
			last: readView{v: v, rev: 42, at: 1000}}}
	a.shown.failing = 1500
	got := string(a.viewText(2000, errors.New("etcd\ndown"), 7))
	want := fmt.Sprintf(`wsem-agent-view 1
name seats
id 7
pid %d
this h1
prefix /wsem/seats/
look 2000
refresh 5300000000
read 1000
revision 42
capacity 6
free 3
failing 1500 etcd down
host h%%202 1 0 0 0 0
host h0 0 0 0 0 1
host h1 2 2 2 2 1
host h3 0 3 1 1 1
`, os.Getpid())
	if got != want {
		t.Errorf("viewText:\n%s\nwant:\n%s", got, want)
	}
	want = strings.Replace(want, "failing 1500 etcd down\n", "", 1)
	if got := string(a.viewText(2000, nil, 7)); got != want {
		t.Errorf("viewText without an error:\n%s\nwant:\n%s", got, want)
	}
}

// A look at 1,000 hosts writes the view file's text: go test -bench
// ViewText (see bench/HISTORY.md, "The view file's text").
func BenchmarkViewText1000(b *testing.B) {
	k := &keptView{capacity: 2000, loaded: true, rev: 5,
		v: view{shares: map[string]int64{}, demands: map[string]demand{},
			alive: map[string]bool{}, shareRevs: map[string]int64{},
			ttls: map[string]int64{}, ttlRevs: map[string]int64{}}}
	for i := 0; i < 1000; i++ {
		h := fmt.Sprintf("h%04d", i)
		k.v.shares[h], k.v.alive[h] = 1, true
		k.v.demands[h] = demand{need: 1, floor: 1, rev: int64(1000 - i)}
	}
	s := &store{prefix: "/wsem/scale/"}
	v, _, err := s.snapshot(k)
	if err != nil {
		b.Fatal(err)
	}
	s.last = readView{v, 5, 1}
	a := &agent{lim: &limit{name: "scale", host: "h0001", ttl: 10,
		hold: time.Second}, st: s}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a.viewText(2, nil, 1)
	}
}
