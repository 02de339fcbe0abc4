//go:build !linux

package stripe

import "os/exec"

func dieWithTest(*exec.Cmd) {}
