// SPDX-License-Identifier: GPL-2.0

package main

// The cluster limits of wsem.d: the lines with cluster=etcd.  Other lines
// are wsem apply's alone.

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

type limit struct {
	name      string
	capacity  int64 // the cluster's, and the host semaphore's ceiling
	endpoints []string
	policy    string
	host      string
	prefix    string
	ttl       int           // seconds of the agent's etcd lease
	hold      time.Duration // an idle share goes back after this
	turn      time.Duration // a served host keeps its place this long
	mode      os.FileMode
	cacert    string
	cert, key string
}

// The largest value of each numeric key: capacity as the kernel takes it,
// ttl an hour, hold and turn a day (in milliseconds).
var limits = map[string]int64{
	"capacity": 1 << 62, "ttl": 3600, "hold": 86400000, "turn": 86400000,
}

func parseLimit(name string, words []string) (*limit, error) {
	lim := &limit{name: name, policy: "finish", prefix: "/wsem", ttl: 10,
		hold: time.Second, turn: time.Second, mode: 0600}
	host, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	lim.host = host
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok || v == "" {
			return nil, fmt.Errorf("%q is no KEY=VALUE", w)
		}
		var n int64
		if max, ok := limits[k]; ok {
			n, err = strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 || n > max {
				return nil, fmt.Errorf("%s=%s: not a number "+
					"from 1 to %d", k, v, max)
			}
		}
		switch k {
		case "capacity":
			lim.capacity = n
		case "ttl":
			lim.ttl = int(n)
		case "hold":
			lim.hold = time.Duration(n) * time.Millisecond
		case "turn":
			lim.turn = time.Duration(n) * time.Millisecond
		case "cluster":
			if v != "etcd" {
				return nil, fmt.Errorf("cluster=%s: only etcd", v)
			}
		case "endpoints":
			lim.endpoints = strings.Split(v, ",")
		case "policy":
			if v != "finish" && v != "deadline" {
				return nil, fmt.Errorf("policy=%s: finish or "+
					"deadline", v)
			}
			lim.policy = v
		case "host":
			lim.host = v
		case "prefix":
			lim.prefix = strings.TrimRight(v, "/")
		case "mode":
			m, err := strconv.ParseUint(v, 8, 32)
			if err != nil || m > 0777 {
				return nil, fmt.Errorf("mode=%s: not octal "+
					"permission bits", v)
			}
			lim.mode = os.FileMode(m)
		case "cacert":
			lim.cacert = v
		case "cert":
			lim.cert = v
		case "key":
			lim.key = v
		case "owner", "group":
			// wsem apply's
		default:
			return nil, fmt.Errorf("%s: unknown key for a cluster "+
				"limit", k)
		}
	}
	if lim.capacity == 0 || len(lim.endpoints) == 0 {
		return nil, fmt.Errorf("a cluster limit needs capacity= and " +
			"endpoints=")
	}
	return lim, nil
}

func readConf(path string) ([]*limit, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lims []*limit
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		words := strings.Fields(line)
		if len(words) < 2 || !strings.Contains(line, "cluster=") {
			continue
		}
		lim, err := parseLimit(words[0], words[1:])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %v", path, n,
				words[0], err)
		}
		lims = append(lims, lim)
	}
	return lims, sc.Err()
}

// readConfs reads the files named, and the .conf files of the directories
// named, in the order of their names; no limit may be declared twice.
func readConfs(paths []string) ([]*limit, error) {
	var files []string
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			names, _ := filepath.Glob(filepath.Join(p, "*.conf"))
			sort.Strings(names)
			files = append(files, names...)
		} else {
			files = append(files, p)
		}
	}
	return readFiles(files)
}

// defaultFiles are the .conf files wsem apply reads without PATH: of
// /etc/wsem.d, /run/wsem.d and /usr/lib/wsem.d, a name in /etc hides the
// same in /run and /usr/lib, one in /run the same in /usr/lib; a winning
// file that is /dev/null (a symlink to it) masks the name; in the order of
// the names, whatever the directory.
func defaultFiles() []string {
	win := map[string]string{}
	var names []string
	for _, d := range []string{"/etc/wsem.d", "/run/wsem.d",
		"/usr/lib/wsem.d"} {
		found, _ := filepath.Glob(filepath.Join(d, "*.conf"))
		for _, f := range found {
			b := filepath.Base(f)
			if _, ok := win[b]; !ok {
				win[b] = f
				names = append(names, b)
			}
		}
	}
	sort.Strings(names)
	var files []string
	for _, b := range names {
		if t, err := filepath.EvalSymlinks(win[b]); err == nil &&
			t == os.DevNull {
			continue
		}
		files = append(files, win[b])
	}
	return files
}

func readFiles(files []string) ([]*limit, error) {
	var all []*limit
	seen := map[string]string{}
	for _, f := range files {
		lims, err := readConf(f)
		if err != nil {
			return nil, err
		}
		for _, lim := range lims {
			if first, ok := seen[lim.name]; ok {
				return nil, fmt.Errorf("%s: %s declared again "+
					"(first in %s)", f, lim.name, first)
			}
			seen[lim.name] = f
		}
		all = append(all, lims...)
	}
	return all, nil
}
