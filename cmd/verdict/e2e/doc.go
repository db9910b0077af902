// Package e2e tests the built verdict binary as an operator runs it: its commands and exit
// codes, and its resident memory under hostile clients. Its tests build cmd/verdict once and run
// the program; they are of the full tier (go test without -short), since the build links the
// whole server.
package e2e
