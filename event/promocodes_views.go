package event

import (
	"slices"
	"time"
)

// ---- views of promotion codes

// PromotionCode is the promotion code record. Uses counts paid orders and
// live orders holding a use.
type PromotionCode struct {
	ID         string         `json:"id"`
	EventID    string         `json:"eventId"`
	Code       string         `json:"code"`
	PercentOff *int           `json:"percentOff"`
	AmountOff  *Money         `json:"amountOff"`
	MaxUses    *int           `json:"maxUses"`
	Uses       int            `json:"uses"`
	ExpiresAt  *Time          `json:"expiresAt"`
	AppliesTo  PromotionScope `json:"appliesTo"`
	Status     string         `json:"status" v:"enum=active|disabled|expired|exhausted"`
	CreatedAt  Time           `json:"createdAt"`
	UpdatedAt  Time           `json:"updatedAt"`
}

func (m *Machine) promoView(p *PromoRec, now time.Time) PromotionCode {
	v := PromotionCode{
		ID: p.ID, EventID: m.s.ID, Code: p.Code, MaxUses: intp(p.MaxUses), Uses: p.Uses + p.Held,
		ExpiresAt: tp(p.ExpiresAt), Status: p.status(now), CreatedAt: At(p.CreatedAt), UpdatedAt: At(p.UpdatedAt),
		AppliesTo: PromotionScope{TicketTypeIDs: orEmpty(slices.Clone(p.Scope.TicketTypeIDs)),
			AddonIDs: orEmpty(slices.Clone(p.Scope.AddonIDs)), BundleIDs: orEmpty(slices.Clone(p.Scope.BundleIDs))},
	}
	if p.PercentOff > 0 {
		pct := p.PercentOff
		v.PercentOff = &pct
	} else {
		off := p.AmountOff
		v.AmountOff = &off
	}
	return v
}
