using System.Diagnostics;
using System.Globalization;
using System.Text;
using Queue.Client;

namespace Queue.Cli;

/// <summary>
/// Runs the worker's command for one item: the document as a temp file (QUEUE_DOCUMENT) and on stdin, the item's fields
/// as QUEUE_* variables, stdout passed on line by line (prefixed with the document's name), and the tail of stderr
/// kept for the failure message.
/// </summary>
internal sealed class ItemProcess(string command, IReadOnlyList<string> args, TextWriter output, TextWriter error)
{
    private const int TailChars = 2000;
    private static readonly Lock OutputGate = new();

    public async Task RunAsync(WorkItem work, CancellationToken ct)
    {
        var item = work.Item;
        var dir = Directory.CreateTempSubdirectory("queue-item-");
        try
        {
            var document = Path.Combine(dir.FullName, SafeName(item.DocumentName));
            await using (var source = await work.OpenDocumentAsync(ct))
            await using (var file = File.Create(document))
            {
                await source.CopyToAsync(file, ct);
            }
            var start = new ProcessStartInfo(command)
            {
                RedirectStandardInput = true,
                RedirectStandardOutput = true,
                RedirectStandardError = true,
                UseShellExecute = false,
            };
            foreach (var a in args)
            {
                start.ArgumentList.Add(a);
            }
            // The command processes untrusted documents: it gets no worker key, which claims every tenant's items.
            start.Environment.Remove("QUEUE_KEY");
            start.Environment.Remove("QUEUE_KEY_FILE");
            foreach (var (k, v) in Variables(item, document))
            {
                start.Environment[k] = v;
            }
            using var process = Process.Start(start) ?? throw new InvalidOperationException($"could not start {command}");
            var tail = new StringBuilder();
            var stdout = PumpAsync(process.StandardOutput, line => Write(output, $"{item.DocumentName}: {line}"));
            var stderr = PumpAsync(process.StandardError, line =>
            {
                Write(error, $"{item.DocumentName}! {line}");
                lock (tail)
                {
                    tail.Append(line).Append('\n');
                    if (tail.Length > TailChars)
                    {
                        tail.Remove(0, tail.Length - TailChars);
                    }
                }
            });
            await FeedAsync(process, document, ct);
            try
            {
                await process.WaitForExitAsync(ct);
            }
            catch (OperationCanceledException)
            {
                process.Kill(entireProcessTree: true);
                throw;
            }
            await Task.WhenAll(stdout, stderr);
            if (process.ExitCode != 0)
            {
                string last;
                lock (tail)
                {
                    last = tail.ToString().TrimEnd();
                }
                throw new InvalidOperationException(string.Create(CultureInfo.InvariantCulture, $"exit code {process.ExitCode}: {last}"));
            }
        }
        finally
        {
            dir.Delete(recursive: true);
        }
    }

    private static async Task FeedAsync(Process process, string document, CancellationToken ct)
    {
        try
        {
            await using var file = File.OpenRead(document);
            await file.CopyToAsync(process.StandardInput.BaseStream, ct);
        }
        catch (IOException)
        {
            // The command exited or closed stdin without reading it all: it works from QUEUE_DOCUMENT instead.
        }
        finally
        {
            try
            {
                process.StandardInput.Close();
            }
            catch (IOException)
            {
                // Same: the pipe is already gone.
            }
        }
    }

    private static async Task PumpAsync(StreamReader reader, Action<string> onLine)
    {
        while (await reader.ReadLineAsync() is { } line)
        {
            onLine(line);
        }
    }

    private static void Write(TextWriter writer, string line)
    {
        lock (OutputGate)
        {
            writer.WriteLine(line);
        }
    }

    internal static IEnumerable<(string, string)> Variables(LeasedItem item, string document)
    {
        var inv = CultureInfo.InvariantCulture;
        yield return ("QUEUE_DOCUMENT", document);
        yield return ("QUEUE_ITEM_ID", item.Id.ToString(inv));
        yield return ("QUEUE_JOB_ID", item.JobId.ToString(inv));
        yield return ("QUEUE_TASK", item.Task);
        yield return ("QUEUE_TENANT", item.Tenant);
        yield return ("QUEUE_DOCUMENT_ID", item.DocumentId.ToString(inv));
        yield return ("QUEUE_DOCUMENT_NAME", item.DocumentName);
        yield return ("QUEUE_CONTENT_TYPE", item.ContentType);
        yield return ("QUEUE_ATTEMPT", item.Attempt.ToString(inv));
        yield return ("QUEUE_LEASE_EXPIRES_AT", item.LeaseExpiresAt.UtcDateTime.ToString("yyyy-MM-ddTHH:mm:ssZ", inv));
    }

    /// <summary>The document's own file name (its extension helps many tools), without anything that could leave the temp folder.</summary>
    private static string SafeName(string name)
    {
        var last = name.Replace('\\', '/').Split('/')[^1];
        var safe = new string(last.Select(c => char.IsLetterOrDigit(c) || c is '.' or '-' or '_' ? c : '_').ToArray()).TrimStart('.');
        return safe.Length == 0 ? "document" : safe;
    }
}
