using Queue.Core.Jobs;

namespace Queue.Api.Jobs;

/// <summary>
/// A multipart body that does not parse for its boundary is the client's error (docs/CONTRACT.md "POST /jobs/{id}/documents": 400, never a 5xx).
/// MultipartReader reports it as InvalidDataException or a plain IOException; a client that went away is not that.
/// </summary>
internal sealed class MalformedMultipart(Stream section, CancellationToken ct) : AsyncReadOnlyStream
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
}
