namespace Queue.Api.Jobs;

/// <summary>
/// A multipart body that does not parse for its boundary is the client's error (docs/CONTRACT.md "POST /jobs/{id}/documents": 400, never a 5xx).
/// MultipartReader reports it as InvalidDataException or a plain IOException; a client that went away is not that.
/// </summary>
internal sealed class MalformedMultipart(Stream section, CancellationToken ct) : Stream
{
    public static async Task<T> Guard<T>(Func<Task<T>> read, CancellationToken ct)
    {
        try
        {
            return await read();
        }
        catch (Exception ex) when (IsMalformed(ex, ct))
        {
            throw new Core.ValidationException(new Dictionary<string, string[]>
            {
                ["body"] = [$"is not valid multipart/form-data for its boundary: {ex.Message}"],
            });
        }
    }

    private static bool IsMalformed(Exception ex, CancellationToken ct) =>
        !ct.IsCancellationRequested && (ex is InvalidDataException
            || (ex is IOException && ex is not BadHttpRequestException && ex is not Microsoft.AspNetCore.Connections.ConnectionResetException));

    public override async ValueTask<int> ReadAsync(Memory<byte> buffer, CancellationToken cancellationToken = default) =>
        await Guard(() => section.ReadAsync(buffer, cancellationToken).AsTask(), ct);

    public override Task<int> ReadAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) =>
        ReadAsync(buffer.AsMemory(offset, count), cancellationToken).AsTask();

    public override int Read(byte[] buffer, int offset, int count) => throw new NotSupportedException("read asynchronously");

    public override bool CanRead => true;

    public override bool CanSeek => false;

    public override bool CanWrite => false;

    public override long Length => throw new NotSupportedException();

    public override long Position { get => throw new NotSupportedException(); set => throw new NotSupportedException(); }

    public override void Flush()
    {
    }

    public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();

    public override void SetLength(long value) => throw new NotSupportedException();

    public override void Write(byte[] buffer, int offset, int count) => throw new NotSupportedException();
}
