namespace Queue.Core.Jobs;

/// <summary>
/// A forward-only stream read asynchronously, as request bodies and documents are: a subclass implements
/// <see cref="ReadAsync(Memory{byte}, CancellationToken)"/> and nothing else.
/// </summary>
public abstract class AsyncReadOnlyStream : Stream
{
    public abstract override ValueTask<int> ReadAsync(Memory<byte> buffer, CancellationToken cancellationToken = default);

    public sealed override Task<int> ReadAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) =>
        ReadAsync(buffer.AsMemory(offset, count), cancellationToken).AsTask();

    /// <summary>Synchronous reads would block a thread on the network: refused.</summary>
    public sealed override int Read(byte[] buffer, int offset, int count) => throw new NotSupportedException("read asynchronously only");

    public sealed override bool CanRead => true;

    public sealed override bool CanSeek => false;

    public sealed override bool CanWrite => false;

    public sealed override long Length => throw new NotSupportedException();

    public override long Position { get => throw new NotSupportedException(); set => throw new NotSupportedException(); }

    public sealed override void Flush()
    {
    }

    public sealed override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();

    public sealed override void SetLength(long value) => throw new NotSupportedException();

    public sealed override void Write(byte[] buffer, int offset, int count) => throw new NotSupportedException();
}
