using System.Xml.Linq;
using Dapper;
using Microsoft.AspNetCore.DataProtection.Repositories;
using MySqlConnector;
using Queue.Core.Sql;

namespace Queue.Admin.Infrastructure;

/// <summary>
/// The Admin's data-protection key ring in the database (<c>data_protection_keys</c>, V70), shared by every Admin
/// process: a login cookie or an antiforgery token protected by one is read by all, and a restart keeps every login.
/// The key manager calls this synchronously, when it loads the ring (at start and about once a day), never per request;
/// the calls are the driver's own synchronous ones, not async calls waited on.
/// </summary>
/// <remarks>
/// The keys are stored unencrypted, readable by whoever can read the database, which already holds everything the
/// Admin protects (docs/DESIGN.md "Scaling out"); a deployment that wants more adds
/// <c>ProtectKeysWithCertificate</c>, which wraps each element before it reaches this class.
/// </remarks>
public sealed class DatabaseKeyRing(IServiceProvider services) : IXmlRepository
{
    // Resolved per call: the data source exists only once DatabaseBootstrap has run, and the data-protection hosted
    // service, which starts first, tries an early load of the ring (it logs the failure and loads it on first use).
    private MySqlDataSource Db => services.GetRequiredService<MySqlDataSource>();

    public IReadOnlyCollection<XElement> GetAllElements()
    {
        using var conn = Db.OpenConnection();
        return conn.Query<string>(ClusterSql.AllKeys).Select(XElement.Parse).ToList();
    }

    public void StoreElement(XElement element, string friendlyName)
    {
        using var conn = Db.OpenConnection();
        conn.Execute(ClusterSql.StoreKey, new { Name = friendlyName, Xml = element.ToString(SaveOptions.DisableFormatting) });
    }
}
