package stripe

import (
	"os/exec"
	"syscall"
)

// dieWithTest has the kernel kill stripe-mock when the test binary dies
// (a panic or a timeout skips TestMain's clean-up).
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
