using Queue.Local;

namespace Queue.Tests.Infrastructure;

/// <summary>
/// A database plus the Api on it, the Api's every connection going through a <see cref="FaultProxy"/> that the tests
/// arm. The fixture's own <see cref="DatabaseFixture.DataSource"/> bypasses the proxy, so checks see the truth.
/// </summary>
public class FaultProxyApiFixture : DatabaseFixture
{
    public FaultProxy Proxy { get; } = new();

    public ApiFactory Api { get; private set; } = null!;

    public override async Task InitializeAsync()
    {
        await base.InitializeAsync();
        Proxy.Start(Server.Port);
        Api = new ApiFactory(Proxy.ConnectionString(ConnectionString));
        _ = Api.Server;
    }

    public override async Task DisposeAsync()
    {
        await Api.DisposeAsync();
        await Proxy.DisposeAsync();
        await base.DisposeAsync();
    }
}
