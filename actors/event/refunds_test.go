package event

// refundCommands names the refund commands for scripts and fuzzing.
func refundCommands() []Command {
	return []Command{GetRefundPolicy{}, SetRefundPolicy{}, RequestRefund{}, CompleteRefund{}}
}
