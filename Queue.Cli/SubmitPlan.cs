using System.Security.Cryptography;
using System.Text;

namespace Queue.Cli;

/// <summary>One file to submit: where it is, the name it gets (its relative path), and its content hash.</summary>
internal sealed record SubmitFile(string Path, string Name, string Sha256, long Size)
{
    public string ContentType => System.IO.Path.GetExtension(Name).ToLowerInvariant() switch
    {
        ".txt" or ".log" or ".md" => "text/plain",
        ".csv" => "text/csv",
        ".json" => "application/json",
        ".xml" => "application/xml",
        ".html" or ".htm" => "text/html",
        ".pdf" => "application/pdf",
        ".png" => "image/png",
        ".jpg" or ".jpeg" => "image/jpeg",
        ".tif" or ".tiff" => "image/tiff",
        _ => "application/octet-stream",
    };
}

/// <summary>
/// What <c>queue submit</c> sends, with deterministic Idempotency-Keys: the job's from its name, tasks and the set of
/// (relative path, content hash); each file's from the job's key, its relative path and its hash. A second run over
/// the same files therefore replays the first run's answers instead of creating anything twice.
/// </summary>
internal sealed record SubmitPlan(string JobKey, IReadOnlyList<SubmitFile> Files)
{
    public string FileKey(SubmitFile f) => "queue-doc-" + Hash($"{JobKey}\n{f.Name}\n{f.Sha256}")[..48];

    public static async Task<SubmitPlan> BuildAsync(string name, IReadOnlyList<string> tasks, IReadOnlyList<string> paths, CancellationToken ct)
    {
        var found = new List<(string Path, string Name)>();
        foreach (var p in paths)
        {
            if (Directory.Exists(p))
            {
                var root = Path.GetFullPath(p);
                found.AddRange(Directory.EnumerateFiles(root, "*", SearchOption.AllDirectories)
                    .Select(f => (f, Path.GetRelativePath(root, f).Replace('\\', '/'))));
            }
            else if (File.Exists(p))
            {
                var full = Path.GetFullPath(p);
                var rel = Path.GetRelativePath(Environment.CurrentDirectory, full);
                found.Add((full, (rel.StartsWith("..", StringComparison.Ordinal) ? Path.GetFileName(full) : rel).Replace('\\', '/')));
            }
            else
            {
                throw new FileNotFoundException($"no such file or folder: {p}", p);
            }
        }
        var files = new List<SubmitFile>(found.Count);
        foreach (var (path, rel) in found.DistinctBy(f => f.Name, StringComparer.Ordinal).OrderBy(f => f.Name, StringComparer.Ordinal))
        {
            await using var stream = new FileStream(path, FileMode.Open, FileAccess.Read, FileShare.Read, 81920, FileOptions.Asynchronous | FileOptions.SequentialScan);
            var hash = Convert.ToHexStringLower(await SHA256.HashDataAsync(stream, ct));
            files.Add(new SubmitFile(path, rel, hash, stream.Length));
        }
        var manifest = new StringBuilder().Append(name).Append('\n').Append(string.Join(',', tasks)).Append('\n');
        foreach (var f in files)
        {
            manifest.Append(f.Name).Append('\t').Append(f.Sha256).Append('\n');
        }
        return new SubmitPlan("queue-job-" + Hash(manifest.ToString())[..48], files);
    }

    private static string Hash(string text) => Convert.ToHexStringLower(SHA256.HashData(Encoding.UTF8.GetBytes(text)));
}
