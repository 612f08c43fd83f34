// SPDX-License-Identifier: LGPL-2.1-or-later

// Command pool runs a command for a number of jobs, as many at once as a
// semaphore allows, the way x/sync's worker-pool example limits its
// goroutines with semaphore.NewWeighted(maxWorkers).  The one difference
// is the semaphore: a wsem one, named, so that every pool started with the
// same -name shares the limit, whichever process it runs in.
//
//	pool -name builds -limit 4 -jobs 10 -- make -C "dir$POOL_JOB"
//
// Each job runs COMMAND with POOL_JOB set to its number (0..J-1) and holds
// -weight units while it runs.  SIGINT or SIGTERM stops starting jobs: the
// waiting Acquire is cancelled and leaves the queue.  The exit status is 0
// when every job ran and exited 0, 1 otherwise, 2 for a usage error.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"

	"wsem.example/wsem"
)

func main() {
	name := flag.String("name", "pool", "the semaphore shared by the pools")
	limit := flag.Int64("limit", 4, "its capacity, if this pool creates it")
	weight := flag.Int64("weight", 1, "units each job holds")
	jobs := flag.Int("jobs", 1, "how many times to run COMMAND")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: %s [OPTION]... -- COMMAND [ARG]...\n",
			os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 || *jobs < 0 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(),
		os.Interrupt, syscall.SIGTERM)
	defer stop()

	// semaphore.NewWeighted(*limit), for all the pools on this machine.
	sem, err := wsem.NewWeighted(*name, *limit)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pool:", err)
		os.Exit(1)
	}
	defer sem.Close()

	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for i := 0; i < *jobs; i++ {
		if err := sem.Acquire(ctx, *weight); err != nil {
			fmt.Fprintf(os.Stderr, "pool: job %d: %v\n", i, err)
			mu.Lock()
			failed += *jobs - i
			mu.Unlock()
			break
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer sem.Release(*weight)
			if err := run(i); err != nil {
				fmt.Fprintf(os.Stderr, "pool: job %d: %v\n", i, err)
				mu.Lock()
				failed++
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	if failed > 0 {
		sem.Close()
		os.Exit(1)
	}
}

// run runs COMMAND for job i.
func run(i int) error {
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Env = append(os.Environ(), "POOL_JOB="+strconv.Itoa(i))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}
