// The test node's sandbox ("pause") process: PID 1 of every pod's sandbox,
// holding its namespaces. It sleeps until told to stop and reaps the zombies
// of a pod that shares its PID namespace, as Kubernetes' own pause does; it is
// built here because no registry is reachable (scripts/kube/ensure-binaries.sh).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
