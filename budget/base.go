package budget

// ReplaceBaseSource makes s the base configuration of its name, as if
// Config.Sources had held it from the start, adding it when the base has
// none; it reports whether the base changed. Like AddBaseSource it changes
// this Budget only, never the store: it is what a re-read configuration
// file says, so a later start with the same file finds nothing stored to
// override it. A stored override of the same name (SetSource, ReportLimit)
// still wins, and Overridden names it.
func (b *Budget) ReplaceBaseSource(s Source) (bool, error) {
	return b.putBaseSource(s, func(cur, s Source, ok bool) bool { return !ok || !sameSource(cur, s) })
}

// putBaseSource validates and normalizes s, then makes it the base source
// of its name if put, shown the base's current source of that name (ok
// when there is one) and the normalized s, agrees; it reports whether the
// base changed. The base map is replaced, never changed in place, since
// snapshots taken before share it.
func (b *Budget) putBaseSource(s Source, put func(cur, s Source, ok bool) bool) (bool, error) {
	if err := s.Validate(); err != nil {
		return false, err
	}
	s = s.normalized()
	b.mu.Lock()
	defer b.mu.Unlock()
	if cur, ok := b.baseSources[s.Name]; !put(cur, s, ok) {
		return false, nil
	}
	srcs := make(map[string]Source, len(b.baseSources)+1)
	for n, v := range b.baseSources {
		srcs[n] = v
	}
	srcs[s.Name] = s
	b.baseSources = srcs
	cur := b.snap.Load()
	next := b.effective(b.cur, cur.gen)
	next.loaded = cur.loaded
	b.snap.Store(next)
	return true, nil
}
