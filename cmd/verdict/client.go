package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"verdict/internal/cli"
)

// runCommand is `verdict run`: Ctrl-C and SIGTERM go to the command, which asks once whether
// to cancel the run (or cancels it without asking with --cancel-on-interrupt).
func runCommand(args []string) int {
	interrupts := make(chan os.Signal, 2)
	signal.Notify(interrupts, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(interrupts)
	return cli.Run(context.Background(), args, cli.IO{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
		Interrupts: interrupts, Ask: askTerminal})
}

// askTerminal asks a yes/no question on the controlling terminal; without one (a CI job), the
// answer is no.
func askTerminal(question string) bool {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer tty.Close()
	fmt.Fprint(tty, question)
	line, _ := bufio.NewReader(tty).ReadString('\n')
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes"
}
