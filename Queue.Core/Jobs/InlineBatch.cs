using System.Buffers;
using System.Buffers.Text;
using System.Security.Cryptography;
using System.Text;
using System.Text.Json;

namespace Queue.Core.Jobs;

/// <summary>
/// The JSON parameters that let a new job's inline documents go into MySQL in set-based statements: metadata (name,
/// type, size, SHA-256) and contents (base64, passed through as received and decoded by the server).
/// A lone document is kept decoded instead (<see cref="Single"/>): it goes in with plain VALUES.
/// </summary>
internal sealed record InlineBatch(string Metadata, string Contents, LoneDocument? Single = null)
{
    public long Bytes => Single is { } one ? one.Content.Length : Metadata.Length + Contents.Length;

    public static InlineBatch Build(IReadOnlyList<InlineDocument> documents)
    {
        if (documents.Count == 1)
        {
            var d = documents[0];
            byte[] content;
            try
            {
                content = Convert.FromBase64String(d.Base64);
            }
            catch (FormatException)
            {
                throw new ArgumentException($"document '{d.Name}' is not valid base64 (validate before calling)", nameof(documents));
            }
            return new InlineBatch("", "", new LoneDocument(content, SHA256.HashData(content)));
        }

        var metadata = new ArrayBufferWriter<byte>();
        var contents = new StringBuilder(documents.Sum(d => d.Base64.Length + 3) + 2).Append('[');
        using (var w = new Utf8JsonWriter(metadata))
        {
            w.WriteStartArray();
            byte[]? buffer = null;
            try
            {
                foreach (var d in documents)
                {
                    var max = Base64.GetMaxDecodedFromUtf8Length(d.Base64.Length);
                    if (buffer is null || buffer.Length < max)
                    {
                        if (buffer is not null)
                        {
                            ArrayPool<byte>.Shared.Return(buffer);
                        }
                        buffer = ArrayPool<byte>.Shared.Rent(Math.Max(max, 4096));
                    }
                    if (!Convert.TryFromBase64String(d.Base64, buffer, out var size))
                    {
                        throw new ArgumentException($"document '{d.Name}' is not valid base64 (validate before calling)", nameof(documents));
                    }
                    w.WriteStartObject();
                    w.WriteString("n", d.Name);
                    w.WriteString("t", d.ContentType);
                    w.WriteNumber("s", size);
                    w.WriteString("h", Convert.ToHexStringLower(SHA256.HashData(buffer.AsSpan(0, size))));
                    w.WriteEndObject();
                    contents.Append(contents.Length > 1 ? ",\"" : "\"");
                    // The base64 alphabet needs no JSON escaping; anything else (whitespace a client wrapped lines with)
                    // is normalised by re-encoding, so the server's FROM_BASE64 sees canonical input.
                    if (IsCanonical(d.Base64))
                    {
                        contents.Append(d.Base64);
                    }
                    else
                    {
                        contents.Append(Convert.ToBase64String(buffer.AsSpan(0, size)));
                    }
                    contents.Append('"');
                }
            }
            finally
            {
                if (buffer is not null)
                {
                    ArrayPool<byte>.Shared.Return(buffer);
                }
            }
            w.WriteEndArray();
        }
        return new InlineBatch(Encoding.UTF8.GetString(metadata.WrittenSpan), contents.Append(']').ToString());
    }

    private static readonly SearchValues<char> Alphabet = SearchValues.Create("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=");

    private static bool IsCanonical(string s) => s.Length % 4 == 0 && !s.AsSpan().ContainsAnyExcept(Alphabet);
}

internal sealed record LoneDocument(byte[] Content, byte[] Sha256);
