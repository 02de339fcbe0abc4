package event

import "time"

// liveLimits is the hold limits' indexes as they answer at now: only the
// entries that count, no empty lists. A live index may keep entries a
// rebuilt one never had (or the reverse); the counts must agree.
func (s *State) liveLimits(now time.Time) holdLimits {
	keep := func(m map[string][]string, live func(id string) bool) map[string][]string {
		out := map[string][]string{}
		for k, ids := range m {
			var l []string
			for _, id := range ids {
				if live(id) {
					l = append(l, id)
				}
			}
			if len(l) > 0 {
				out[k] = l
			}
		}
		return out
	}
	holding := func(id string) bool { o, ok := s.Orders[id]; return ok && o.holding() }
	return holdLimits{
		byEmail:  keep(s.idx.limits.byEmail, holding),
		byClient: keep(s.idx.limits.byClient, holding),
		sessions: keep(s.idx.limits.sessions, func(id string) bool { return s.sessionLive(id, now) }),
	}
}
