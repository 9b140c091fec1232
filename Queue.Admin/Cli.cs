using System.Globalization;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.Logging.Abstractions;
using Queue.Core;
using Queue.Core.Data;
using Queue.Core.Jobs;
using Queue.Core.Ordering;
using Queue.Core.Security;

namespace Queue.Admin;

/// <summary>
/// Scripting commands: <c>create-tenant NAME [--tasks a,b]</c>, <c>create-key --role customer|worker [--tenant NAME]</c>,
/// <c>create-technician LOGIN PASSWORD</c>, <c>migrate</c> and <c>preview</c> (<see cref="PreviewCommand"/>). New keys go
/// to stdout, and nowhere else. A usage mistake exits 2 with the usage on stderr.
/// </summary>
public static class Cli
{
    public static readonly string[] Commands = ["create-tenant", "create-key", "create-technician", "migrate", "preview"];

    private static readonly string[] Usages =
    [
        "create-tenant NAME [--tasks a,b] [--if-missing]",
        "create-key --role customer|worker [--tenant NAME] [--label TEXT]",
        "create-technician LOGIN PASSWORD",
        "migrate",
        PreviewCommand.Usage,
    ];

    /// <summary>
    /// Runs a command and returns its exit code, or null when <paramref name="args"/> are the web host's own (none,
    /// <c>--urls ...</c>, <c>Key=Value</c>, <c>/key value</c>): then the caller starts the host. A first argument that
    /// is none of those and no command is a typo: usage, exit 2, and no host started on a port nobody asked for.
    /// </summary>
    public static async Task<int?> TryRunAsync(string[] args, TextWriter stdout, TextWriter stderr, CancellationToken ct = default)
    {
        if (args.Length == 0 || args[0].StartsWith('-') || args[0].StartsWith('/') || args[0].Contains('=', StringComparison.Ordinal))
        {
            return null;
        }
        if (!Commands.Contains(args[0]))
        {
            await stderr.WriteLineAsync($"unknown command '{args[0]}'.\n{UsageText}");
            return 2;
        }
        if (args[0] == "preview")
        {
            return await RunPreviewAsync(args, stdout, stderr, ct);
        }
        return await RunAsync(args);
    }

    private static string UsageText => "usage: Queue.Admin " + string.Join("\n       Queue.Admin ", Usages)
        + "\n   or: Queue.Admin [--urls URL] [Key=Value]... to start the web host";

    private static IConfigurationRoot Configuration(string[] args) =>
        new ConfigurationBuilder().AddEnvironmentVariables().AddCommandLine(args.Where(a => a.Contains('=', StringComparison.Ordinal)).ToArray()).Build();

    /// <summary>Preview connects but never migrates: it must not change the database, not even its schema.</summary>
    private static async Task<int> RunPreviewAsync(string[] args, TextWriter stdout, TextWriter stderr, CancellationToken ct)
    {
        var o = PreviewCommand.Parse(args, out var error);
        if (o is null)
        {
            await stderr.WriteLineAsync($"{error}\nusage: Queue.Admin {PreviewCommand.Usage}");
            return 2;
        }
        var config = Configuration(args);
        var ordering = new OrderingOptions();
        config.GetSection("Ordering").Bind(ordering);
        await using var db = new MySqlConnector.MySqlDataSourceBuilder(QueueDatabase.Normalize(QueueDatabase.ResolveConnectionString(config))).Build();
        var clock = TimeProvider.System;
        long? tenantId = null;
        if (o.Tenant is { } name)
        {
            tenantId = (await new TenantService(db, clock).FindAsync(name, ct))?.Id;
            if (tenantId is null)
            {
                await stderr.WriteLineAsync($"no tenant named '{name}'\nusage: Queue.Admin {PreviewCommand.Usage}");
                return 2;
            }
        }
        var mode = o.Mode ?? new OrderingCalendar(clock, Microsoft.Extensions.Options.Options.Create(ordering)).Current.NextMode switch
        {
            OrderingMode.Smallest => "smallest",
            _ => "oldest",
        };
        using var meter = new ThroughputMeter(db, clock);
        var result = await new OrderingPreview(db, clock, meter).PreviewAsync(
            new PreviewRequest(mode, o.Policy ?? ordering.Policy, o.Overrides, o.Task, tenantId, o.Top), ct);
        await stdout.WriteAsync(o.Json ? PreviewJson.From(result).Serialize() + "\n" : PreviewCommand.Table(result));
        return 0;
    }

    public static async Task<int> RunAsync(string[] args)
    {
        var config = Configuration(args);
        var cs = QueueDatabase.ResolveConnectionString(config);
        await Migrations.ApplyAsync(cs, NullLogger.Instance);
        await using var db = new MySqlConnector.MySqlDataSourceBuilder(QueueDatabase.Normalize(cs)).Build();
        var clock = TimeProvider.System;
        var opt = Microsoft.Extensions.Options.Options.Create(new AuthOptions());
        var tenants = new TenantService(db, clock);
        try
        {
            switch (args[0])
            {
                case "migrate":
                    await Console.Error.WriteLineAsync("migrations applied");
                    return 0;
                case "create-tenant":
                {
                    var name = Positional(args, 1) ?? throw Usage("create-tenant NAME [--tasks a,b]");
                    var existing = await tenants.FindAsync(name, default);
                    if (existing is not null && Flag(args, "--if-missing"))
                    {
                        Console.WriteLine(existing.Id.ToString(CultureInfo.InvariantCulture));
                        return 0;
                    }
                    var tasks = (Option(args, "--tasks") ?? "default").Split(',', StringSplitOptions.RemoveEmptyEntries);
                    var t = await tenants.CreateAsync(name, new TenantSettings(tasks), default);
                    Console.WriteLine(t.Id.ToString(CultureInfo.InvariantCulture));
                    return 0;
                }
                case "create-key":
                {
                    var role = Option(args, "--role") switch
                    {
                        "customer" => KeyRole.Customer,
                        "worker" => KeyRole.Worker,
                        _ => throw Usage("create-key --role customer|worker [--tenant NAME] [--label TEXT]"),
                    };
                    long? tenantId = null;
                    if (Option(args, "--tenant") is { } tn)
                    {
                        tenantId = (await tenants.FindAsync(tn, default) ?? throw new ValidationException(
                            new Dictionary<string, string[]> { ["tenant"] = [$"no tenant named '{tn}'"] })).Id;
                    }
                    var key = await new ApiKeyService(db, clock, opt).IssueAsync(role, tenantId, Option(args, "--label"), default);
                    Console.WriteLine(key.Secret);
                    return 0;
                }
                case "create-technician":
                {
                    var login = Positional(args, 1) ?? throw Usage("create-technician LOGIN PASSWORD");
                    var password = Positional(args, 2) ?? throw Usage("create-technician LOGIN PASSWORD");
                    var tech = await new TechnicianService(db, clock).CreateAsync(login, password, default);
                    Console.WriteLine(tech.Id.ToString(CultureInfo.InvariantCulture));
                    return 0;
                }
                default:
                    throw Usage(UsageText);
            }
        }
        catch (ValidationException ex)
        {
            await Console.Error.WriteLineAsync(ex.Message);
            return 2;
        }
        catch (ArgumentException ex)
        {
            await Console.Error.WriteLineAsync("usage: Queue.Admin " + ex.Message);
            return 2;
        }
    }

    private static ArgumentException Usage(string text) => new(text);

    private static string? Option(string[] args, string name)
    {
        var i = Array.IndexOf(args, name);
        return i >= 0 && i + 1 < args.Length ? args[i + 1] : null;
    }

    private static bool Flag(string[] args, string name) => args.Contains(name);

    private static string? Positional(string[] args, int index)
    {
        var positional = new List<string>();
        for (var i = 0; i < args.Length; i++)
        {
            if (args[i].StartsWith("--", StringComparison.Ordinal))
            {
                if (!args[i].Contains('=', StringComparison.Ordinal) && args[i] != "--if-missing")
                {
                    i++;
                }
                continue;
            }
            positional.Add(args[i]);
        }
        return index < positional.Count ? positional[index] : null;
    }
}
