package event

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestPassChanged(t *testing.T) {
	at := time.Unix(0, 0)
	for _, tc := range []struct {
		ch   Change
		regs []string
		all  bool
	}{
		{RegistrationStatusChanged{At: at, ID: "reg_1", Status: RegCancelled}, []string{"reg_1"}, false},
		{PassRotated{At: at, ID: "reg_2", PassToken: "p"}, []string{"reg_2"}, false},
		{WaitlistSeated{At: at, RegistrationIDs: []string{"reg_3", "reg_4"}}, []string{"reg_3", "reg_4"}, false},
		{EventUpdated{At: at, Name: "x"}, nil, true},
		{LocationSet{At: at, Venue: "v"}, nil, true},
		{CheckedIn{At: at, ID: "chk_1", RegID: "reg_1"}, nil, false},
	} {
		regs, all := PassChanged(tc.ch)
		assert.Equal(t, tc.regs, regs, tc.ch.ChangeKind())
		assert.Equal(t, tc.all, all, tc.ch.ChangeKind())
	}
}
