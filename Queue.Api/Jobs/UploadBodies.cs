using System.Runtime.CompilerServices;
using Microsoft.AspNetCore.WebUtilities;
using Microsoft.Net.Http.Headers;
using Queue.Core.Jobs;

namespace Queue.Api.Jobs;

/// <summary>The documents of an upload, as streams read straight from the request body: a raw body, or multipart file parts.</summary>
internal static class UploadBodies
{
    /// <summary>
    /// File parts per multipart upload at most (docs/CONTRACT.md). Counted while reading, before the next part is held:
    /// 200,000 empty parts in 24 MiB took the Api to 427 MB and ended in a 503 that a retry repeated.
    /// </summary>
    public const int MaxParts = 10_000;

    public static async IAsyncEnumerable<IncomingDocument> One(IncomingDocument document)
    {
        await Task.CompletedTask;
        yield return document;
    }

    /// <summary>One document per file part, each read as a stream straight from the request body.</summary>
    public static async IAsyncEnumerable<IncomingDocument> Multipart(Stream body, string boundary, [EnumeratorCancellation] CancellationToken ct)
    {
        var reader = new MultipartReader(boundary, body) { HeadersLengthLimit = 16 * 1024, BodyLengthLimit = null };
        var index = 0;
        while (await MalformedMultipart.Guard(() => reader.ReadNextSectionAsync(ct), ct) is { } section)
        {
            if (index >= MaxParts)
            {
                throw new Core.ValidationException(new Dictionary<string, string[]>
                {
                    ["parts"] = [$"an upload holds at most {MaxParts} file parts: send more documents in further uploads"],
                });
            }
            var disposition = section.GetContentDispositionHeader();
            if (disposition is null || !disposition.IsFileDisposition())
            {
                var part = disposition?.Name.Value ?? $"part {index}";
                throw new Core.ValidationException(new Dictionary<string, string[]>
                {
                    [part] = ["only file parts are accepted: send each document with a filename"],
                });
            }
            var fileName = HeaderUtilities.RemoveQuotes(disposition.FileNameStar.HasValue ? disposition.FileNameStar : disposition.FileName).Value;
            yield return new IncomingDocument(fileName ?? "", section.ContentType ?? "application/octet-stream", new MalformedMultipart(section.Body, ct));
            index++;
        }
        // The epilogue too, before the upload commits: the Idempotency-Key's fingerprint covers every byte sent.
        await body.CopyToAsync(Stream.Null, ct);
    }
}
