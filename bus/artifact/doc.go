// Package artifact stores artifacts — a step's durable outputs, a research
// step's fetched sources — by content in the JetStream Object Store, and
// reads them back verified against the sha256 the ledger recorded.
//
// Invariants:
//
//  1. Bytes stream. Put reads its io.Reader in the Object Store's chunks
//     (128 KiB) and Get writes them as they arrive: neither holds a whole
//     artifact in memory, whatever its size.
//  2. An object is named by its content ("sha256/<hex>", ContentName).
//     Put sends the chunks first, under a fresh upload id, and the
//     object's metadata — which names it, and is the only way to its
//     chunks — last, once every chunk is acknowledged. Put returns only
//     once that metadata is acknowledged too, so a caller that records
//     the artifact (artifact.stored) after Put returns records only whole
//     objects; a crash before leaves chunks no metadata names, an orphan
//     no reader finds and the bucket's age limit removes. Putting bytes
//     already stored writes their metadata again, pointing at the new
//     chunks; the old ones age out.
//  3. Every read is verified against the hash the caller expects (the
//     one a signed event recorded), never only against the object's own
//     metadata, which whoever can write the bucket can rewrite: Open and
//     Get refuse an object whose size or sha256 differ (ErrTampered), and
//     GetFile writes nothing at its path, GetVerified nothing to its
//     writer, unless the whole object verified.
//  4. Size caps are the caller's (the policy's): Put with MaxSize stops
//     reading past it and fails with ErrTooLarge, recording nothing. A
//     run's cap is kept across concurrent stores by reserving each
//     store's size first (Reserve, a compare-and-set on the run's total:
//     ErrRunFull) and giving back what was not stored (Release).
//
// The bucket (Bucket) is made with the replicas of the cluster's streams
// (bus.StreamConfig.Replicas, one source of truth): Ensure, called by
// bus.EnsureStreams.
//
// Usage:
//
//	st, err := artifact.Open(ctx, js)
//	info, err := st.Put(ctx, "report.md", r, artifact.PutOptions{MaxSize: 1 << 30,
//		Meta: map[string]string{"url": u}})
//	// only now record event.ArtifactStoredData{Name: info.Name, Size: info.Size,
//	//	SHA256: info.SHA256, Object: info.Object, Meta: info.Meta, …}
//	err = st.GetFile(ctx, info.SHA256, info.Size, info.Object, "/work/dir/report.md", 0)
//	// or st.Open / st.Get for a reader or a writer, which fail with
//	// ErrTampered (errors.Is) when the bytes are not the recorded ones.
package artifact
