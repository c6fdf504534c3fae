// Command pause is the first process of every pod sandbox on mini's nodes: it holds the pod's
// namespaces, reaps the orphans that end up with it as their parent, and exits on SIGINT or
// SIGTERM, which is all a sandbox process does. Ours, so that no image comes from a registry.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for received := range signals {
		if received != syscall.SIGCHLD {
			os.Exit(0)
		}
		reapChildren()
	}
}

// reapChildren collects every child that has exited, so no zombie outlives its container.
func reapChildren() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
