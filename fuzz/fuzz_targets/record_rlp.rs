//! Feeds arbitrary bytes to the block record decoder, past the checksum and zstd layers that
//! would reject nearly every mutation before it reached the RLP.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(record) = bal_replay_dump::decode_record(data) {
        // The input may be a non-canonical encoding the decoder tolerates, so compare canonical
        // forms: whatever decodes must re-encode to bytes that decode to the same encoding.
        let canonical = bal_replay_dump::encode_record(&record);
        let again = bal_replay_dump::decode_record(&canonical)
            .map(|record| bal_replay_dump::encode_record(&record));
        assert_eq!(again.as_deref(), Ok(canonical.as_slice()));
    }
});
