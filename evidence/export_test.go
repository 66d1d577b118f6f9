package evidence

// WaitRefresh waits until no background refresh runs. Tests call it only
// when no reader can start another one concurrently.
func WaitRefresh(b *Book) { b.wg.Wait() }
