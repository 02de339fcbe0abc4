package actors

import "ticketd/ask"

// record puts rec's entry for result into the open batch and returns it.
func (c *committer) record(rec *ask.Recorder, result any) (key, value []byte) {
	if rec == nil || rec.Value == nil || rec.Key == nil {
		return nil, nil
	}
	v := rec.Value(result)
	if v == nil {
		return nil, nil
	}
	c.put(rec.Key, v)
	return rec.Key, v
}
