using System.Globalization;
using System.Security.Cryptography;

namespace Queue.Tests.Client;

/// <summary>A folder of generated files (some in subfolders) that deletes itself, with each file's SHA-256 by relative path.</summary>
public sealed class TempFolder : IDisposable
{
    private TempFolder(string path, Dictionary<string, string> hashes)
    {
        Path = path;
        Hashes = hashes;
    }

    public string Path { get; }

    public IReadOnlyDictionary<string, string> Hashes { get; }

    public static async Task<TempFolder> CreateAsync(int files)
    {
        var root = Directory.CreateTempSubdirectory("queue-client-test-").FullName;
        var hashes = new Dictionary<string, string>(StringComparer.Ordinal);
        for (var i = 0; i < files; i++)
        {
            // Every tenth file in a subfolder, so names are relative paths; sizes vary so no two contents are alike.
            var rel = i % 10 == 0 ? $"sub/f{i:D4}.txt" : $"f{i:D4}.txt";
            var bytes = new byte[100 + (i * 37 % 2000)];
            Random.Shared.NextBytes(bytes);
            var full = System.IO.Path.Combine(root, rel);
            Directory.CreateDirectory(System.IO.Path.GetDirectoryName(full)!);
            await File.WriteAllBytesAsync(full, bytes);
            hashes[rel] = Convert.ToHexStringLower(SHA256.HashData(bytes));
        }
        return new TempFolder(root, hashes);
    }

    public static long JobIdFrom(IEnumerable<string> output) =>
        long.Parse(output.Select(l => System.Text.RegularExpressions.Regex.Match(l, @"^job (\d+)\b")).Last(m => m.Success).Groups[1].Value, CultureInfo.InvariantCulture);

    public void Dispose() => Directory.Delete(Path, recursive: true);
}
