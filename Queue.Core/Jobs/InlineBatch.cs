using System.Security.Cryptography;

namespace Queue.Core.Jobs;

/// <summary>
/// What a new job's inline documents need besides their bytes before they go into MySQL: their SHA-256 hashes, in
/// request order, and their size for the group's cap. The bytes go in as binary parameters of multi-row VALUES
/// (<see cref="Sql.JobSql.InsertInlineDocuments"/>), not as JSON for the server to shred: see docs/DESIGN.md
/// "Grouped submissions".
/// </summary>
internal sealed class InlineBatch
{
    private InlineBatch(byte[][] hashes, long bytes)
    {
        Hashes = hashes;
        Bytes = bytes;
    }

    public byte[][] Hashes { get; }

    /// <summary>What the job's documents send to the database: their bytes plus room for each row's other columns.</summary>
    public long Bytes { get; }

    public static InlineBatch Build(IReadOnlyList<InlineDocument> documents)
    {
        var hashes = new byte[documents.Count][];
        long bytes = 0;
        for (var i = 0; i < documents.Count; i++)
        {
            var d = documents[i];
            hashes[i] = SHA256.HashData(d.Content);
            bytes += d.Content.Length + d.Name.Length + d.ContentType.Length + 64;
        }
        return new InlineBatch(hashes, bytes);
    }
}
