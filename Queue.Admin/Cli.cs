using System.Globalization;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.Logging.Abstractions;
using Queue.Core;
using Queue.Core.Data;
using Queue.Core.Security;

namespace Queue.Admin;

/// <summary>
/// Scripting commands: <c>create-tenant NAME [--tasks a,b]</c>, <c>create-key --role customer|worker [--tenant NAME]</c>,
/// <c>create-technician LOGIN PASSWORD</c> and <c>migrate</c>. New keys go to stdout, and nowhere else.
/// </summary>
public static class Cli
{
    public static readonly string[] Commands = ["create-tenant", "create-key", "create-technician", "migrate"];

    public static async Task<int> RunAsync(string[] args)
    {
        var config = new ConfigurationBuilder().AddEnvironmentVariables().AddCommandLine(args.Where(a => a.Contains('=', StringComparison.Ordinal)).ToArray()).Build();
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
                    throw Usage(string.Join(" | ", Commands));
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
            return 64;
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
