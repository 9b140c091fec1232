using System.Buffers.Text;
using System.Security.Cryptography;

namespace Queue.Core.Jobs;

/// <summary>
/// A new job's inline documents, decoded once: their bytes and SHA-256 hashes, in request order. They go into MySQL as
/// binary parameters of multi-row VALUES (<see cref="Sql.JobSql.InsertInlineDocuments"/>), not as JSON for the server
/// to shred: see docs/DESIGN.md "Grouped submissions".
/// </summary>
internal sealed class InlineBatch
{
    private InlineBatch(byte[][] contents, byte[][] hashes, long bytes)
    {
        Contents = contents;
        Hashes = hashes;
        Bytes = bytes;
    }

    public byte[][] Contents { get; }

    public byte[][] Hashes { get; }

    /// <summary>What the job's documents send to the database: their bytes plus room for each row's other columns.</summary>
    public long Bytes { get; }

    public static InlineBatch Build(IReadOnlyList<InlineDocument> documents)
    {
        var contents = new byte[documents.Count][];
        var hashes = new byte[documents.Count][];
        long bytes = 0;
        for (var i = 0; i < documents.Count; i++)
        {
            var d = documents[i];
            var content = new byte[Base64.GetMaxDecodedFromUtf8Length(d.Base64.Length)];
            if (!Convert.TryFromBase64String(d.Base64, content, out var size))
            {
                throw new ArgumentException($"document '{d.Name}' is not valid base64 (validate before calling)", nameof(documents));
            }
            contents[i] = size == content.Length ? content : content.AsSpan(0, size).ToArray();
            hashes[i] = SHA256.HashData(contents[i]);
            bytes += size + d.Name.Length + d.ContentType.Length + 64;
        }
        return new InlineBatch(contents, hashes, bytes);
    }
}
