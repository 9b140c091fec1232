using Queue.Client;
using Queue.Local;
using Queue.Core.Security;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Client;

/// <summary>
/// The real Api on a Kestrel socket (the client's SocketsHttpHandler, retries and the proxy need real connections), on
/// a fresh database, with a worker key. Each test makes its own tenant and uses its own task names, so no test's worker
/// takes another test's items.
/// </summary>
public sealed class ClientFixture : DatabaseFixture
{
    public ApiFactory Api { get; private set; } = null!;

    public int Port { get; private set; }

    public Uri BaseAddress => new($"http://127.0.0.1:{Port}/");

    public string WorkerKey { get; private set; } = "";

    public override async Task InitializeAsync()
    {
        await base.InitializeAsync();
        Port = PrivateMariaDb.FreePort();
        Api = new ApiFactory(ConnectionString);
        Api.UseKestrel(Port);
        Api.StartServer();
        WorkerKey = await NewWorkerKeyAsync();
    }

    public override async Task DisposeAsync()
    {
        await Api.DisposeAsync();
        await base.DisposeAsync();
    }

    /// <summary>A new tenant whose items go dead after <paramref name="maxAttempts"/> failed attempts, and its customer key.</summary>
    public async Task<(long TenantId, string Key)> CustomerAsync(string task, int maxAttempts = 5)
    {
        var (tenant, key) = await NewCustomerAsync(settings: new TenantSettings([task], MaxAttempts: maxAttempts));
        return (tenant.Id, key);
    }

    public QueueClient Client(string key, Uri? baseAddress = null, Action<QueueClientOptions>? configure = null)
    {
        var options = new QueueClientOptions { BaseAddress = baseAddress ?? BaseAddress, ApiKey = key };
        configure?.Invoke(options);
        return new QueueClient(options);
    }

    /// <summary>Runs the <c>queue</c> command in process, through its real entry point and parser.</summary>
    public async Task<CliRun> RunCliAsync(string key, CancellationToken ct, Action<string>? onOutputLine = null, params string[] args)
    {
        var output = new LineWriter(onOutputLine);
        var error = new LineWriter(null);
        var exit = await Queue.Cli.QueueCli.RunAsync(["--url", BaseAddress.ToString(), "--key", key, .. args], output, error, ct);
        return new CliRun(exit, output.Lines, error.Lines);
    }
}
