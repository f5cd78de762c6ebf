//! The site's resources as the configuration defines them: a resource's
//! definition and type, built in or made with `qmgr -c "create resource"`.

use super::Config;
use crate::site_resources::{BUILT_IN, ResourceDef, ResourceType, built_in};

impl Config {
    /// The site's definition of a resource, if it made one.
    pub fn resource_def(&self, name: &str) -> Option<&ResourceDef> {
        self.resources.get(name)
    }

    /// A resource's type, built in or defined by the site.
    pub fn resource_type(&self, name: &str) -> Option<ResourceType> {
        built_in(name).or_else(|| self.resource_def(name).map(|d| d.kind))
    }

    /// Every resource name, built in and the site's, for messages.
    pub fn resource_names(&self) -> String {
        let site: Vec<&str> = self.resources.keys().map(String::as_str).collect();
        let built: Vec<&str> = BUILT_IN.iter().map(|(n, _)| *n).collect();
        if site.is_empty() {
            format!(
                "built in: {}; a site defines others with qmgr -c \"create resource NAME type = long\"",
                built.join(", ")
            )
        } else {
            format!(
                "built in: {}; defined here: {}",
                built.join(", "),
                site.join(", ")
            )
        }
    }

    /// The type of a resource named in an attribute (`resources_max.mem`),
    /// or a message listing the resources that exist.
    pub fn known_resource(&self, attr: &str, name: &str) -> Result<ResourceType, String> {
        self.resource_type(name).ok_or_else(|| {
            format!(
                "{attr}: unknown resource \"{name}\"; {}",
                self.resource_names()
            )
        })
    }
}
