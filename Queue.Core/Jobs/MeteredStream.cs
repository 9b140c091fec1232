using System.Security.Cryptography;

namespace Queue.Core.Jobs;

/// <summary>
/// Reads a document through: counts its bytes, stops it past the limit, and computes its SHA-256 as the bytes pass,
/// so neither the size check nor the hash needs the whole document in memory.
/// </summary>
public sealed class MeteredStream(Stream inner, long limit, string what) : AsyncReadOnlyStream
{
    private readonly IncrementalHash hash = IncrementalHash.CreateHash(HashAlgorithmName.SHA256);

    public long BytesRead { get; private set; }

    /// <summary>The SHA-256 of everything read so far.</summary>
    public byte[] Hash() => hash.GetCurrentHash();

    public override async ValueTask<int> ReadAsync(Memory<byte> buffer, CancellationToken cancellationToken = default)
    {
        var n = await inner.ReadAsync(buffer, cancellationToken);
        Account(buffer.Span[..n]);
        return n;
    }

    private void Account(ReadOnlySpan<byte> data)
    {
        BytesRead += data.Length;
        if (BytesRead > limit)
        {
            throw new PayloadTooLargeException($"{what} is over the limit of {limit} bytes");
        }
        hash.AppendData(data);
    }

    public override long Position { get => BytesRead; set => throw new NotSupportedException(); }

    protected override void Dispose(bool disposing)
    {
        if (disposing)
        {
            hash.Dispose();
        }
        base.Dispose(disposing);
    }
}

/// <summary>Bytes already read (the probe) followed by the rest of a stream.</summary>
internal sealed class PrefixedStream(ReadOnlyMemory<byte> prefix, Stream rest) : AsyncReadOnlyStream
{
    private ReadOnlyMemory<byte> pending = prefix;

    public override async ValueTask<int> ReadAsync(Memory<byte> buffer, CancellationToken cancellationToken = default)
    {
        if (!pending.IsEmpty)
        {
            var n = Math.Min(buffer.Length, pending.Length);
            pending[..n].CopyTo(buffer);
            pending = pending[n..];
            return n;
        }
        return await rest.ReadAsync(buffer, cancellationToken);
    }

}
