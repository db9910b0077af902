package realtime

// Connections counts this replica's authenticated sockets (those in an organization's room),
// for the metrics. It walks the connections, so it is for scrapes, not for a request's path.
func (h *Hub) Connections() int {
	n := 0
	h.live.Range(func(_, _ any) bool { n++; return true })
	return n
}
