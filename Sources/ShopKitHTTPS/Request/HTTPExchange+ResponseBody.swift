extension HTTPExchange.StateMachine {
    /// The response body's chunks between the connection and the one reader, with watermarks.
    ///
    /// Why not `AsyncThrowingStream`: its storage is generic code in the concurrency runtime, not specialized for
    /// our element, and every yield, read and teardown paid for runtime generic-metadata lookups (callgrind:
    /// replacing it took a keep-alive request from 228k to 194k instructions).
    struct ResponseBody {
        var chunks: [ArraySlice<UInt8>] = []
        var nextChunk = 0
        /// nil while open; `.success` once finished (or cancelled); `.failure` until the error has been thrown once.
        var end: Result<Void, any Error>?
        var readerWaiting = false
        /// Ended by the reading task's cancellation (not by the connection).
        var endedByCancellation = false
        /// Bytes yielded and not yet read.
        var bufferedBytes = 0
        /// The connection was told to hold reads back and has not been asked to go on yet.
        var producerPaused = false
        /// Nobody will read any more (the body was dropped): chunks are discarded, the connection never pauses.
        var abandoned = false

        /// Adds a chunk (dropped once the body ended or was dropped); false when the reader is behind.
        mutating func yield(_ chunk: ArraySlice<UInt8>, _ effects: inout Effects) -> Bool {
            guard end == nil, !abandoned else { return true }
            if readerWaiting {
                readerWaiting = false
                effects.reader = .success(chunk)
                return true
            }
            chunks.append(chunk)
            bufferedBytes += chunk.count
            if bufferedBytes > HTTPExchange.StateMachine.highWatermark { producerPaused = true }
            return !producerPaused
        }

        /// Ends the body: the reader gets the buffered chunks, then the end (or the error, once).
        mutating func finish(_ result: Result<Void, any Error>, _ effects: inout Effects) {
            guard end == nil else { return }
            end = result
            guard readerWaiting else { return }
            // A waiting reader means nothing is buffered: it gets the end now (the error is then consumed).
            readerWaiting = false
            switch result {
            case .success: effects.reader = .success(nil)
            case .failure(let error):
                end = .success(())
                effects.reader = .failure(error)
            }
        }

        /// What the reader gets next; asks a paused connection to go on once the reader has caught up.
        mutating func take(_ effects: inout Effects) -> Read {
            let read: Read
            if nextChunk < chunks.count {
                let chunk = chunks[nextChunk]
                nextChunk += 1
                bufferedBytes -= chunk.count
                if nextChunk == chunks.count {
                    chunks.removeAll(keepingCapacity: chunks.count <= 16)
                    nextChunk = 0
                }
                read = .chunk(chunk)
            } else {
                switch end {
                case nil: read = .wait
                case .success: read = .end
                case .failure(let error):
                    end = .success(())
                    read = .error(error)
                }
            }
            if producerPaused, bufferedBytes <= HTTPExchange.StateMachine.lowWatermark {
                producerPaused = false
                effects.resumeReading = true
            }
            return read
        }

        /// The reader's task was cancelled: whether the body was still open (it is now ended).
        mutating func cancelByReader(_ effects: inout Effects) -> Bool {
            guard end == nil else { return false }
            end = .success(())
            endedByCancellation = true
            discardBuffered()
            producerPaused = false
            if readerWaiting {
                readerWaiting = false
                effects.reader = .success(nil)
            }
            return true
        }

        /// The body was dropped unread: whether it was still open.
        mutating func abandon(_ effects: inout Effects) -> Bool {
            abandoned = true
            discardBuffered()
            if producerPaused {
                producerPaused = false
                effects.resumeReading = true
            }
            return end == nil
        }

        private mutating func discardBuffered() {
            chunks = []
            nextChunk = 0
            bufferedBytes = 0
        }
    }
}
