package stripemock

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill stripe-mock when the test binary dies
// (a panic or a timeout skips the clean-up).
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
