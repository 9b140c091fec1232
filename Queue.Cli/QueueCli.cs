using System.CommandLine;
using Queue.Client;

namespace Queue.Cli;

/// <summary>
/// The <c>queue</c> command. Settings come from <c>--url</c>/<c>--key</c> or QUEUE_URL/QUEUE_KEY. Callable in process
/// (tests, embedding) with its own output writers and token; as a tool, Ctrl-C cancels the token.
/// </summary>
public static class QueueCli
{
    internal static readonly Option<string?> Url = new("--url") { Description = "Queue's base URL (default: $QUEUE_URL)", Recursive = true };

    internal static readonly Option<string?> Key = new("--key") { Description = "API key (default: $QUEUE_KEY); shows in ps, prefer --key-file", Recursive = true };

    internal static readonly Option<string?> KeyFile = new("--key-file")
    {
        Description = "a file holding the API key (default: $QUEUE_KEY_FILE)",
        Recursive = true,
    };

    public static RootCommand Build()
    {
        var root = new RootCommand("queue: submit a folder, run a worker, watch a job (Queue's HTTP contract, docs/CONTRACT.md)");
        root.Options.Add(Url);
        root.Options.Add(Key);
        root.Options.Add(KeyFile);
        root.Subcommands.Add(SubmitCommand.Build());
        root.Subcommands.Add(StatusCommand.Build());
        root.Subcommands.Add(JobsCommand.Build());
        root.Subcommands.Add(ExplainCommand.Build());
        root.Subcommands.Add(WorkCommand.Build());
        return root;
    }

    public static async Task<int> RunAsync(string[] args, TextWriter output, TextWriter error, CancellationToken ct)
    {
        var config = new InvocationConfiguration { Output = output, Error = error };
        return await Build().Parse(args).InvokeAsync(config, ct);
    }

    /// <summary>A client from the flags, else the environment; null (with the reason written) when either is missing.</summary>
    internal static QueueClient? Client(ParseResult parse)
    {
        var url = parse.GetValue(Url) ?? Environment.GetEnvironmentVariable("QUEUE_URL");
        var key = parse.GetValue(Key) ?? FromFile(parse.GetValue(KeyFile)) ?? Environment.GetEnvironmentVariable("QUEUE_KEY")
            ?? FromFile(Environment.GetEnvironmentVariable("QUEUE_KEY_FILE"));
        if (string.IsNullOrWhiteSpace(url) || string.IsNullOrWhiteSpace(key) || !Uri.TryCreate(url, UriKind.Absolute, out var uri))
        {
            parse.InvocationConfiguration.Error.WriteLine("queue: set QUEUE_URL and QUEUE_KEY (or pass --url and --key)");
            return null;
        }
        var error = parse.InvocationConfiguration.Error;
        return new QueueClient(new QueueClientOptions
        {
            BaseAddress = uri,
            ApiKey = key,
            OnRetry = r => error.WriteLine($"queue: {r.Method} {r.Path}: {(r.Status is { } s ? s.ToString(System.Globalization.CultureInfo.InvariantCulture) : r.Error?.Message)}; retry {r.Attempt} in {r.Delay.TotalSeconds:F1} s"),
        });
    }

    /// <summary>The key in <paramref name="path"/>, trimmed; null when no path is given or the file is missing.</summary>
    private static string? FromFile(string? path) =>
        string.IsNullOrWhiteSpace(path) || !File.Exists(path) ? null : File.ReadAllText(path).Trim();

    /// <summary>Runs a command's body with its client, turning Queue's errors into one line and exit code 1.</summary>
    internal static async Task<int> WithClientAsync(ParseResult parse, Func<QueueClient, TextWriter, Task<int>> body)
    {
        using var client = Client(parse);
        if (client is null)
        {
            return 2;
        }
        try
        {
            return await body(client, parse.InvocationConfiguration.Output);
        }
        catch (QueueApiException e)
        {
            await parse.InvocationConfiguration.Error.WriteLineAsync("queue: " + e.Message);
            return 1;
        }
        catch (OperationCanceledException)
        {
            // Ctrl-C: what was done stays done; a submit run again resumes.
            await parse.InvocationConfiguration.Error.WriteLineAsync("queue: interrupted");
            return 130;
        }
    }
}
