package mail

import "testing"

func TestValidInboxKey(t *testing.T) {
	for k, want := range map[string]bool{
		"mail/evt_01abc/00000000000000ff-0001":  true,
		"mail/evt_01abc/00000000000000ff-000":   false,
		"mail/evt_01abc/00000000000000FF-0001":  false,
		"mail/evt_01abc/00000000000000fg-0001":  false,
		"mail/evt_01abc/00000000000000ff_0001":  false,
		"mail//00000000000000ff-0001":           false,
		"mail/evt/x/00000000000000ff-0001":      false,
		"evt_01abc/00000000000000ff-0001":       false,
		"hooks/evt_01abc/00000000000000ff-0001": false,
		"mail/":                                 false,
		"":                                      false,
		"foo":                                   false,
	} {
		if got := ValidInboxKey(k); got != want {
			t.Errorf("ValidInboxKey(%q) = %v, want %v", k, got, want)
		}
	}
}
