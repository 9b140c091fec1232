namespace Queue.Local;

/// <summary>
/// A long deterministic byte sequence (byte k is k·31 + seed) that costs no memory to produce: large uploads in tests
/// and benches, where neither side should hold the document. The sequence repeats every 256 bytes, so a read copies
/// from one precomputed period instead of computing each byte.
/// </summary>
public sealed class PatternStream : Stream
{
    private readonly long length;
    private readonly byte[] period = new byte[512];
    private long position;

    public PatternStream(long length, byte seed = 0)
    {
        this.length = length;
        for (var k = 0; k < period.Length; k++)
        {
            period[k] = (byte)((k * 31) + seed);
        }
    }

    public override int Read(byte[] buffer, int offset, int count)
    {
        var n = (int)Math.Min(count, length - position);
        for (var done = 0; done < n;)
        {
            // Two periods back to back, so any run of up to 256 bytes is one copy from the current phase.
            var chunk = Math.Min(n - done, 256);
            period.AsSpan((int)((position + done) & 0xFF), chunk).CopyTo(buffer.AsSpan(offset + done, chunk));
            done += chunk;
        }
        position += n;
        return n;
    }

    public override bool CanRead => true;

    public override bool CanSeek => false;

    public override bool CanWrite => false;

    public override long Length => length;

    public override long Position { get => position; set => throw new NotSupportedException(); }

    public override void Flush()
    {
    }

    public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();

    public override void SetLength(long value) => throw new NotSupportedException();

    public override void Write(byte[] buffer, int offset, int count) => throw new NotSupportedException();
}
